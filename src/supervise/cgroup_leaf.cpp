#include "supervise/cgroup_leaf.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <sstream>
#include <utility>

#include "plan/launch_steps.hpp"
#include "policy/module_id.hpp"
#include "probe/cgroup_facts.hpp"
#include "sys/error.hpp"
#include "sys/text_file.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {

CgroupDirOps cgroup_dir_ops{::mkdir, ::rmdir};

namespace {

// Returns 0 or the errno of the write: cgroup files report a refused value on write().
int write_fd(int fd, std::string_view value) {
  ssize_t n = ::write(fd, value.data(), value.size());
  if (n < 0) return errno;
  return n == static_cast<ssize_t>(value.size()) ? 0 : EIO;
}

int write_file(const std::string& path, std::string_view value) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return errno;
  return write_fd(fd.get(), value);
}

bool file_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool contains(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

using Clock = std::chrono::steady_clock;

// Waits until cgroup.events holds "key want". The kernel notifies a change of cgroup.events
// to poll() as POLLPRI (cgroup-v2.rst), so this sleeps until then, not in a busy loop.
bool wait_for_event(const std::string& path, const char* key, std::uint64_t want, int timeout_ms) {
  const std::string events = path + "/cgroup.events";
  UniqueFd fd(::open(events.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return errno == ENOENT && want == 0;  // the leaf is already gone
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    char buffer[256];
    ssize_t n = ::pread(fd.get(), buffer, sizeof buffer - 1, 0);
    if (n < 0) return errno == ENODEV && want == 0;  // removed under us
    buffer[n] = '\0';
    std::istringstream in(buffer);
    for (std::string k; in >> k;) {
      std::uint64_t v = 0;
      in >> v;
      if (k == key && v == want) return true;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd pfd{fd.get(), POLLPRI, 0};
    // Bounded slices: a notification lost between the read and the poll costs 50 ms at most.
    ::poll(&pfd, 1, static_cast<int>(std::min<long>(left.count(), 50)));
  }
}

}  // namespace

std::optional<std::uint64_t> read_cgroup_key(const std::string& file, const std::string& key) {
  std::istringstream in(read_text_file(file));
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string k;
    std::uint64_t v = 0;
    if (fields >> k >> v && k == key) return v;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> read_cgroup_number(const std::string& file) {
  std::istringstream in(read_text_file(file));
  std::uint64_t v = 0;
  if (in >> v) return v;
  return std::nullopt;
}

std::vector<int> read_cgroup_pids(const std::string& path) {
  std::vector<int> pids;
  std::istringstream in(read_text_file(path + "/cgroup.procs"));
  for (int pid = 0; in >> pid;) pids.push_back(pid);
  return pids;
}

void signal_cgroup(const std::string& path, int sig) {
  std::vector<std::pair<int, UniqueFd>> opened;
  for (int pid : read_cgroup_pids(path)) {
    UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd.valid()) {
      if (errno == ENOSYS) ::kill(pid, sig);  // ESRCH: it has ended
      continue;
    }
    opened.emplace_back(pid, std::move(pidfd));
  }
  if (opened.empty()) return;
  const std::vector<int> still = read_cgroup_pids(path);
  for (const auto& [pid, pidfd] : opened) {
    if (std::find(still.begin(), still.end(), pid) == still.end()) continue;
    ::syscall(SYS_pidfd_send_signal, pidfd.get(), sig, nullptr, 0);
  }
}

std::optional<std::string> cgroup2_mount_point() {
  // The usual places first, unified (/sys/fs/cgroup) and hybrid (/sys/fs/cgroup/unified): a
  // cgroup2 file system there (statfs) whose directory is the hierarchy's root (the root alone
  // has no cgroup.events: CFTYPE_NOT_ON_ROOT) is the hierarchy the first cgroup2 line of
  // mountinfo names on such a node, so leaves land in the same cgroups. Generating
  // /proc/self/mountinfo costs about 60 us here; these are two or three short calls.
  // Anything else (a cgroup namespace's root, a bind mount of a sub-tree, another place):
  // mountinfo, as before.
  for (const char* candidate : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    struct statfs fs {};
    if (::statfs(candidate, &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC) continue;
    if (::access((std::string(candidate) + "/cgroup.events").c_str(), F_OK) != 0 &&
        errno == ENOENT) {
      return std::string(candidate);
    }
    break;
  }
  return find_cgroup2_mount(read_text_file("/proc/self/mountinfo"));
}

std::optional<CgroupPlace> find_cgroup_place(const NodeConfig& config, std::string& why_not) {
  auto mount = cgroup2_mount_point();
  if (!mount) {
    why_not = "no cgroup2 file system is mounted";
    return std::nullopt;
  }
  CgroupPlace place;
  place.mount_point = *mount;
  place.parent_is_own = !config.cgroup_parent;
  const std::string relative = leaf_parent_cgroup(
      config, find_unified_cgroup(read_text_file("/proc/self/cgroup")).value_or("/"));
  place.parent_is_root = relative.empty();
  place.parent = place.mount_point + relative;
  if (::access((place.parent + "/cgroup.procs").c_str(), W_OK) != 0 ||
      ::access(place.parent.c_str(), W_OK) != 0) {
    why_not = place.parent + " is not writable by this process (not delegated to the agent)";
    return std::nullopt;
  }
  return place;
}

namespace {

// The "no internal processes" rule: a non-root cgroup that enables controllers for its
// children may hold no process itself. When the parent is our own cgroup, move this process
// into a supervisor leaf first (systemd's documented pattern for Delegate=yes services).
void enable_controllers(const CgroupPlace& place, const LeafLimits& limits) {
  if (limits.controllers.empty() && limits.best_effort_controllers.empty()) return;
  auto enabled = words(read_text_file(place.parent + "/cgroup.subtree_control"));
  // cgroup.controllers only when a controller is not enabled already (an enabled one is
  // available by definition): one read fewer on a node whose parent is set up.
  std::optional<std::vector<std::string>> available;
  std::vector<std::string> to_enable;
  std::vector<std::string> wanted = limits.controllers;
  wanted.insert(wanted.end(), limits.best_effort_controllers.begin(),
                limits.best_effort_controllers.end());
  for (const auto& controller : wanted) {
    if (contains(enabled, controller)) continue;
    if (!available) available = words(read_text_file(place.parent + "/cgroup.controllers"));
    const bool best_effort = contains(limits.best_effort_controllers, controller);
    if (!contains(*available, controller)) {
      if (!limits.required || best_effort) continue;  // pids.max without hard_limits, cpu
      throw step_error(LaunchStep::Cgroup,
                       "the node requires hard limits, and the " + controller +
                           " controller is not available in " + place.parent +
                           " (cgroup.controllers); on a hybrid layout it is bound to cgroup v1",
                       0, ErrorKind::Unenforceable);
    }
    to_enable.push_back(controller);
  }
  if (to_enable.empty()) return;
  if (place.parent_is_own && !place.parent_is_root) {
    const std::string supervisor = place.parent + "/" + std::string(kSupervisorLeaf);
    if (cgroup_dir_ops.make(supervisor.c_str(), 0755) != 0 && errno != EEXIST) {
      throw step_error(LaunchStep::Cgroup, "mkdir " + supervisor, errno);
    }
    if (int err = write_file(supervisor + "/cgroup.procs", "0")) {
      throw step_error(LaunchStep::Cgroup, "moving the agent into " + supervisor, err);
    }
  }
  for (const auto& controller : to_enable) {
    if (int err = write_file(place.parent + "/cgroup.subtree_control", "+" + controller)) {
      if (contains(limits.best_effort_controllers, controller)) continue;
      // EBUSY: the parent holds processes of its own (not ours to move).
      throw step_error(LaunchStep::Cgroup,
                       "enabling " + controller + " in " + place.parent + "/cgroup.subtree_control",
                       err);
    }
  }
}

// True when written; false when the file is missing and not required.
bool write_limit(const std::string& leaf, const std::string& file, const std::string& value,
                 bool required) {
  const std::string path = leaf + "/" + file;
  // Opened at once, without an access() before: ENOENT is the file's absence (its controller
  // is not enabled for the leaf), as access() would have said.
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid() && errno == ENOENT) {
    if (!required) return false;
    throw step_error(LaunchStep::Cgroup,
                     "the node requires hard limits, and " + path + " is missing", 0,
                     ErrorKind::Unenforceable);
  }
  if (int err = fd.valid() ? write_fd(fd.get(), value) : errno) {
    throw step_error(LaunchStep::Cgroup, "writing " + value + " to " + path, err);
  }
  return true;
}

}  // namespace

CgroupLeaf CgroupLeaf::create(const CgroupPlace& place, const std::string& leaf_name,
                              const LeafLimits& limits) {
  enable_controllers(place, limits);
  const std::string path = place.parent + "/" + leaf_name;
  if (cgroup_dir_ops.make(path.c_str(), 0755) != 0) {
    // A dead run's leaf was removed by RunState::claim (its record names it): one that is
    // still there belongs to no run of ours, and is not ours to kill.
    if (errno == EEXIST) {
      throw step_error(LaunchStep::Cgroup, path + " exists and no run of this agent owns it", 0,
                       ErrorKind::Busy);
    }
    throw step_error(LaunchStep::Cgroup, "mkdir " + path, errno);
  }
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) {
    int err = errno;
    cgroup_dir_ops.remove(path.c_str());
    throw step_error(LaunchStep::Cgroup, "open " + path, err);
  }
  CgroupLeaf leaf(path, std::move(dir));
  // The destructor removes the leaf if a limit cannot be written.
  if (limits.pids_max) {
    leaf.pids_limited_ =
        write_limit(path, "pids.max", std::to_string(*limits.pids_max), limits.required);
  }
  if (limits.memory_max) {
    write_limit(path, "memory.max", std::to_string(*limits.memory_max), true);
    // Without this the module would swap instead of meeting its limit (when swap exists).
    write_limit(path, "memory.swap.max", "0", false);
    // One OOM kill takes the whole module, like systemd's OOMPolicy=kill: no half-killed tree.
    write_limit(path, "memory.oom.group", "1", false);
  }
  if (limits.cpu_max) write_limit(path, "cpu.max", *limits.cpu_max, true);
  return leaf;
}

CgroupLeaf::~CgroupLeaf() {
  if (!path_.empty()) destroy();
}

bool CgroupLeaf::destroy() {
  dir_.reset();
  if (path_.empty()) return true;
  bool gone = remove_cgroup(path_);
  if (gone) path_.clear();
  return gone;
}

bool kill_cgroup(const std::string& path, int timeout_ms) {
  if (!file_exists(path)) return true;
  if (write_file(path + "/cgroup.kill", "1") == 0) {
    return wait_for_event(path, "populated", 0, timeout_ms);
  }
  // Before Linux 5.14: freeze so that nothing forks while we kill, SIGKILL each, thaw (a
  // frozen task dies only once thawed).
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Clock::now() < deadline) {
    set_cgroup_frozen(path, true, 1000);
    auto pids = read_cgroup_pids(path);
    for (int pid : pids) ::kill(pid, SIGKILL);
    set_cgroup_frozen(path, false, 1000);
    if (wait_for_event(path, "populated", 0, 200)) return true;
  }
  return false;
}

bool remove_cgroup(const std::string& path, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  // rmdir first: the kernel removes a cgroup only when no process is in it and it has no child
  // cgroup (EBUSY otherwise), so an emptied leaf (sandbox-run's, after its module was reaped)
  // goes at once, without a cgroup.kill that would kill nothing and a wait for "populated 0"
  // that already holds. Any failure: killed first, then removed, as below.
  if (cgroup_dir_ops.remove(path.c_str()) == 0 || errno == ENOENT) return true;
  for (;;) {
    kill_cgroup(path, timeout_ms);
    if (cgroup_dir_ops.remove(path.c_str()) == 0 || errno == ENOENT) return true;
    // EBUSY: a process was still exiting, or a child cgroup exists (a module cannot make one:
    // it has no write access to the cgroup file system).
    if (errno != EBUSY || Clock::now() >= deadline) return false;
  }
}

int set_cgroup_frozen(const std::string& path, bool frozen, int timeout_ms) {
  if (int err = write_file(path + "/cgroup.freeze", frozen ? "1" : "0")) return err;
  return wait_for_event(path, "frozen", frozen ? 1 : 0, timeout_ms) ? 0 : ETIMEDOUT;
}

}  // namespace oarbank
