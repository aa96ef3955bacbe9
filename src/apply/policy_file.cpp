#include "apply/policy_file.hpp"

#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

#include "plan/protected_paths.hpp"
#include "probe/path_facts.hpp"

namespace oarbank {

std::string absolute_path(std::string path) {
  if (!path.empty() && path[0] != '/') {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd) != nullptr) path = std::string(cwd) + "/" + path;
  }
  return path;
}

std::vector<std::string> path_forms(const std::string& path) {
  std::vector<std::string> forms{path};
  std::string head = normalize_path(path), tail;
  // A plain absolute path (normalized: no ".", "..", "//") that opens through no symbolic link
  // (RESOLVE_NO_SYMLINKS, which refuses /proc's magic links too) is its own resolved form:
  // one openat2 instead of realpath's readlink of every component (about 5 us each here, ten
  // for sandbox-run's three usual paths). Any failure (a link: ELOOP; missing: ENOENT; before
  // Linux 5.6: ENOSYS) takes realpath's way, as before.
  if (is_plain_absolute_path(head)) {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS;
    const int fd =
        static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, head.c_str(), &how, sizeof how));
    if (fd >= 0) {
      ::close(fd);
      forms.push_back(head);
      return forms;
    }
  }
  for (;;) {
    if (char* real = ::realpath(head.c_str(), nullptr)) {
      forms.push_back(std::string(real) + tail);
      std::free(real);
      break;
    }
    if (head == "/") break;
    const auto slash = head.rfind('/');
    tail = head.substr(slash) + tail;
    head = slash == 0 ? "/" : head.substr(0, slash);
  }
  return forms;
}

std::optional<std::string> policy_file_inside_writable(const std::string& policy_path,
                                                       const Policy& policy) {
  if (policy_path.empty() || policy_path == "-") return std::nullopt;
  std::vector<NamedPath> writable = writable_policy_paths(policy);
  if (writable.empty()) return std::nullopt;
  for (auto& path : writable) path.forms = path_forms(path.forms.front());
  // The policy file exists (it was just read): where the kernel resolves it, with ".." after
  // the links before it (session 15's second review: work/cfg/../../policy.json, through a link
  // the module made, folded as text to a path outside work while the kernel read the one
  // inside). path_forms folds ".." first, for paths that may not exist; only where realpath
  // fails (the file went meanwhile) is it used here.
  // A plain absolute path has no ".." to fold: path_forms' one openat2 (through no link) says
  // where it is, where realpath would have made a call for each component, on the launch path.
  std::vector<std::string> forms;
  if (const std::string absolute = absolute_path(policy_path); is_plain_absolute_path(absolute)) {
    forms = path_forms(absolute);
  } else if (char* real = ::realpath(policy_path.c_str(), nullptr)) {
    forms.emplace_back(real);
    std::free(real);
  } else {
    forms = path_forms(absolute_path(policy_path));
  }
  return protected_path_problem(writable, {{"the policy file", forms}});
}

}  // namespace oarbank
