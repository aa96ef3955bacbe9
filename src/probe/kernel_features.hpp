// What the running kernel and this node offer, as plain data. probe.cpp fills it by asking the
// kernel; tests build it by hand to cover every ABI and cgroup layout on any machine.
#pragma once

#include <string>
#include <vector>

namespace oarbank {

enum class LandlockState {
  NotBuilt,  // landlock_create_ruleset answers ENOSYS: the kernel has no Landlock
  Disabled,  // EOPNOTSUPP: built, but left out of the boot's lsm= list
  Present,
};

struct CgroupFacts {
  bool probed = false;
  bool mounted = false;          // a cgroup2 file system is mounted
  std::string mount_point;       // "/sys/fs/cgroup", or "/sys/fs/cgroup/unified" (hybrid)
  std::string own_cgroup;        // this process's cgroup, from /proc/self/cgroup ("0::/...")
  std::string parent;            // the directory module leaves are made in
  bool parent_writable = false;  // leaves can be made there (delegated to us, or we are root)
  bool delegated = false;        // systemd marked it delegated (trusted.delegate or user.delegate)
  std::vector<std::string> controllers;  // cgroup.controllers of the parent
  bool kill_file = false;                // cgroup.kill (Linux 5.14)
  bool freeze_file = false;              // cgroup.freeze (Linux 5.2)
};

struct KernelFeatures {
  std::string kernel_release;  // uname -r; a fact for the report, never used to decide
  LandlockState landlock = LandlockState::NotBuilt;
  int landlock_abi = 0;             // the kernel's ABI when Present, else 0
  bool seccomp_filter = false;      // seccomp(2) filters with SECCOMP_RET_ERRNO and KILL_PROCESS
  bool seccomp_user_notif = false;  // SECCOMP_RET_USER_NOTIF (Linux 5.0): issue 14's denials
  int audit_enabled = -1;  // the kernel's audit: 0 off, 1 on, 2 locked on; -1 not known (not root)
  bool running_as_root = false;  // effective uid 0
  // CAP_SYS_ADMIN in the effective set (root in a container may lack it): mount namespaces
  // and mounts in them (issue 12). Probed as root only.
  bool mount_admin = false;
  std::vector<std::string> gpu_device_nodes;  // /dev/dri, /dev/nvidia*, /dev/kfd that exist
  CgroupFacts cgroup;
  bool network_namespaces_probed = false;
  bool network_namespaces = false;  // this process can create a network namespace
  bool ipc_namespaces = false;      // and an IPC namespace (probed with the network's)
};

std::string_view to_string(LandlockState state);

}  // namespace oarbank
