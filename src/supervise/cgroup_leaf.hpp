// One cgroup v2 leaf per module ("Process container" of
// https://docs.codonic.dev/oarbank/spec/sandbox-linux): where it is made, the controllers and
// limits it gets, and how it is torn down (cgroup.kill, else freeze, kill each, thaw). Every
// function here takes paths, so the stale-run cleanup and sandbox-ctl act on a leaf that another
// sandbox-run made.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/node_config.hpp"
#include "plan/mechanism_cgroup.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {

// Where module leaves go on this node, or why there is no cgroup container here.
struct CgroupPlace {
  std::string mount_point;  // the cgroup2 mount
  std::string parent;       // absolute directory the leaves are made in
  // The parent is this process's own cgroup (not the configuration's): to enable controllers
  // there, this process first moves into a supervisor leaf (the "no internal processes" rule).
  bool parent_is_own = false;
  bool parent_is_root = false;  // the hierarchy's root, exempt from that rule
};

// The cgroup2 mount leaves are made under: /sys/fs/cgroup or /sys/fs/cgroup/unified where that
// is a cgroup2 hierarchy's root (statfs, no cgroup.events), else the first cgroup2 mount of
// /proc/self/mountinfo (find_cgroup2_mount). nullopt: none.
std::optional<std::string> cgroup2_mount_point();

// Reads /proc/self/cgroup, and /proc/self/mountinfo where cgroup2_mount_point needs it. nullopt and
// `why_not` when leaves cannot be made (no cgroup2, or the parent is not writable by this process).
std::optional<CgroupPlace> find_cgroup_place(const NodeConfig& config, std::string& why_not);

// Makes the parent ready (supervisor leaf, controllers in cgroup.subtree_control), then the
// leaf with its limits. Throws Error(Unenforceable) when a required controller is missing and
// Error(StepFailed) when a write fails (a leaf made before the failure is removed), and
// Error(Busy) when a cgroup of the leaf's name exists already.
class CgroupLeaf {
 public:
  static CgroupLeaf create(const CgroupPlace& place, const std::string& leaf_name,
                           const LeafLimits& limits);
  CgroupLeaf(CgroupLeaf&&) noexcept = default;
  CgroupLeaf& operator=(CgroupLeaf&&) noexcept = default;
  ~CgroupLeaf();

  [[nodiscard]] const std::string& path() const { return path_; }
  // An O_RDONLY directory descriptor, for clone3's CLONE_INTO_CGROUP.
  [[nodiscard]] int dir_fd() const { return dir_.get(); }
  // Kills every process in the leaf, waits until it is empty and removes it. True when gone.
  bool destroy();
  // Whether its pids.max was written (the limits had one, and the leaf has the controller).
  [[nodiscard]] bool pids_limited() const { return pids_limited_; }

 private:
  CgroupLeaf(std::string path, UniqueFd dir) : path_(std::move(path)), dir_(std::move(dir)) {}
  std::string path_;
  UniqueFd dir_;
  bool pids_limited_ = false;
};

// Test seam: how a leaf directory is made and removed. On cgroup2, mkdir fills the new leaf
// with the kernel's interface files and rmdir takes them with it; a unit test plays the
// kernel's part on a prepared directory tree (tests/unit/cgroup_leaf_test.cpp). Production:
// ::mkdir and ::rmdir. Each answers as they do (0, or -1 and errno).
struct CgroupDirOps {
  int (*make)(const char* path, mode_t mode);
  int (*remove)(const char* path);
};
extern CgroupDirOps cgroup_dir_ops;

// Kills every process in the leaf at `path` (cgroup.kill, Linux 5.14; else freeze, SIGKILL
// each, thaw) and waits up to `timeout_ms` for cgroup.events to say "populated 0".
bool kill_cgroup(const std::string& path, int timeout_ms = 5000);
// kill_cgroup, then rmdir. True when the leaf no longer exists.
bool remove_cgroup(const std::string& path, int timeout_ms = 5000);
// cgroup.freeze (Linux 5.2); waits for cgroup.events to say "frozen". Returns 0 or an errno.
int set_cgroup_frozen(const std::string& path, bool frozen, int timeout_ms = 5000);
// One "key value" line of a flat-keyed cgroup file (cgroup.events, memory.events, cpu.stat).
std::optional<std::uint64_t> read_cgroup_key(const std::string& file, const std::string& key);
std::optional<std::uint64_t> read_cgroup_number(const std::string& file);
std::vector<int> read_cgroup_pids(const std::string& path);
// `sig` to every process of the cgroup at `path`, each by a pidfd opened before a second read
// of cgroup.procs still lists its pid (session 21's attack review: by number, a process that
// ended between the read and the kill left its pid to whatever process got it next, outside
// the cgroup, and root signalled that one). A module cannot move a process out (it cannot write
// another cgroup.procs), so a pid listed after its pidfd was opened is that process, or it has
// ended and the signal goes nowhere. Without pidfd_open (Linux 5.3): by number, as before.
void signal_cgroup(const std::string& path, int sig);

}  // namespace oarbank
