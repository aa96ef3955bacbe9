#include "probe/cgroup_facts.hpp"

#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <sstream>

#include "policy/module_id.hpp"
#include "sys/text_file.hpp"

namespace oarbank {
namespace {

std::string unescape_mountinfo(std::string_view field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      auto octal = field.substr(i + 1, 3);
      bool ok = octal.size() == 3;
      for (char c : octal) ok = ok && c >= '0' && c <= '7';
      if (ok) {
        out += static_cast<char>((octal[0] - '0') * 64 + (octal[1] - '0') * 8 + (octal[2] - '0'));
        i += 3;
        continue;
      }
    }
    out += field[i];
  }
  return out;
}

bool xattr_is_one(const std::string& path, const char* name) {
  char value[8] = {};
  ssize_t n = ::getxattr(path.c_str(), name, value, sizeof value - 1);
  return n > 0 && value[0] == '1';
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

std::optional<std::string> find_cgroup2_mount(std::string_view mountinfo) {
  std::istringstream lines{std::string(mountinfo)};
  std::string line;
  while (std::getline(lines, line)) {
    // "36 25 0:31 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw"
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream after(line.substr(dash + 3));
    std::string fstype;
    after >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream before(line.substr(0, dash));
    std::string id, parent, devno, root, mount_point;
    before >> id >> parent >> devno >> root >> mount_point;
    if (!mount_point.empty()) return unescape_mountinfo(mount_point);
  }
  return std::nullopt;
}

std::optional<std::string> find_unified_cgroup(std::string_view proc_cgroup) {
  std::istringstream lines{std::string(proc_cgroup)};
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return std::nullopt;
}

std::string leaf_parent_cgroup(const NodeConfig& config, const std::string& own_cgroup) {
  std::string relative = config.cgroup_parent ? *config.cgroup_parent : own_cgroup;
  const std::string supervisor = "/" + std::string(kSupervisorLeaf);
  if (!config.cgroup_parent && relative.ends_with(supervisor)) {
    relative.resize(relative.size() - supervisor.size());
  }
  if (relative == "/") relative.clear();
  return relative;
}

CgroupFacts probe_cgroup(const NodeConfig& config, const std::string& proc_root) {
  CgroupFacts facts;
  facts.probed = true;
  auto mount = find_cgroup2_mount(read_text_file(proc_root + "/self/mountinfo"));
  if (!mount) return facts;
  facts.mounted = true;
  facts.mount_point = *mount;
  facts.own_cgroup = find_unified_cgroup(read_text_file(proc_root + "/self/cgroup")).value_or("/");
  const std::string relative = leaf_parent_cgroup(config, facts.own_cgroup);
  facts.parent = facts.mount_point + relative;
  facts.parent_writable = ::access(facts.parent.c_str(), W_OK) == 0 &&
                          ::access((facts.parent + "/cgroup.procs").c_str(), W_OK) == 0;
  facts.delegated =
      xattr_is_one(facts.parent, "trusted.delegate") || xattr_is_one(facts.parent, "user.delegate");
  std::istringstream controllers(read_text_file(facts.parent + "/cgroup.controllers"));
  for (std::string name; controllers >> name;) facts.controllers.push_back(name);
  // The root cgroup has neither cgroup.kill nor cgroup.freeze; a leaf does. Look in the
  // parent when it is not the root, else in a probe leaf made and removed at once.
  std::string where = facts.parent;
  std::string probe_leaf;
  if (relative.empty() && facts.parent_writable) {
    probe_leaf = facts.parent + "/oarbank-probe-" + std::to_string(::getpid());
    if (::mkdir(probe_leaf.c_str(), 0755) == 0) where = probe_leaf;
  }
  facts.kill_file = exists(where + "/cgroup.kill");
  facts.freeze_file = exists(where + "/cgroup.freeze");
  if (!probe_leaf.empty()) ::rmdir(probe_leaf.c_str());
  return facts;
}

}  // namespace oarbank
