#include "probe/probe.hpp"

#include <dirent.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "probe/audit_state.hpp"
#include "probe/cgroup_facts.hpp"
#include "sys/landlock_abi.hpp"

namespace oarbank {
namespace {

void probe_landlock(KernelFeatures& features) {
  int abi = landlock::create_ruleset(nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (landlock::supports(abi, landlock::Abi::V1)) {  // else -1 and errno
    features.landlock = LandlockState::Present;
    features.landlock_abi = abi;
  } else if (errno == EOPNOTSUPP) {
    features.landlock = LandlockState::Disabled;  // built in, left out of lsm= at boot
  } else {
    features.landlock = LandlockState::NotBuilt;  // ENOSYS
  }
}

// SECCOMP_GET_ACTION_AVAIL (Linux 4.14) answers 0 for each action the kernel implements;
// ENOSYS or EINVAL: no seccomp(2), or no filter support.
bool probe_seccomp_filter() {
  for (std::uint32_t action :
       {std::uint32_t{SECCOMP_RET_ERRNO}, std::uint32_t{SECCOMP_RET_KILL_PROCESS}}) {
    if (::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) != 0) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> find_gpu_device_nodes(const std::string& dev_root) {
  std::vector<std::string> nodes;
  DIR* dir = ::opendir(dev_root.c_str());
  if (dir == nullptr) return nodes;
  while (dirent* entry = ::readdir(dir)) {
    std::string_view name = entry->d_name;
    if (name == "dri" || name == "kfd" || name.starts_with("nvidia")) {
      nodes.push_back(dev_root + "/" + std::string(name));
    }
  }
  ::closedir(dir);
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

namespace {

// A child tries unshare(CLONE_NEWNET), then unshare(CLONE_NEWIPC): the only side-effect-free
// way to learn whether this process may create them (root, and not refused by a filter, an
// LSM or a kernel built without CONFIG_NET_NS or CONFIG_IPC_NS). Its exit status has one bit
// for each that failed.
struct NamespaceProbe {
  bool network = false;
  bool ipc = false;
};
NamespaceProbe probe_namespaces() {
  pid_t pid = ::fork();
  if (pid < 0) return {};
  if (pid == 0) {
    ::_exit((::unshare(CLONE_NEWNET) == 0 ? 0 : 1) | (::unshare(CLONE_NEWIPC) == 0 ? 0 : 2));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status)) return {};
  return {(WEXITSTATUS(status) & 1) == 0, (WEXITSTATUS(status) & 2) == 0};
}

// CAP_SYS_ADMIN in this process's effective set (capget: no /proc read, no child).
bool has_mount_admin() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  return (data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective & CAP_TO_MASK(CAP_SYS_ADMIN)) != 0;
}

}  // namespace

KernelFeatures probe_kernel(const NodeConfig& config, ProbeScope scope) {
  KernelFeatures features;
  struct utsname uts {};
  if (::uname(&uts) == 0) features.kernel_release = uts.release;
  probe_landlock(features);
  features.seccomp_filter = probe_seccomp_filter();
  if (scope.denial_facts) {
    features.seccomp_user_notif = seccomp_user_notif_available();
    features.audit_enabled = audit_enabled_state();
  }
  features.running_as_root = ::geteuid() == 0;
  features.mount_admin = features.running_as_root && has_mount_admin();
  if (scope.gpu_devices) features.gpu_device_nodes = find_gpu_device_nodes("/dev");
  if (scope.cgroup) features.cgroup = probe_cgroup(config);
  if (scope.network_namespaces) {
    features.network_namespaces_probed = true;
    const NamespaceProbe namespaces = probe_namespaces();
    features.network_namespaces = namespaces.network;
    features.ipc_namespaces = namespaces.ipc;
  }
  return features;
}

}  // namespace oarbank
