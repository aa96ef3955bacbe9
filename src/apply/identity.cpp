#include "apply/identity.hpp"

#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace oarbank {
namespace {

bool identity_failed(StepError& error, std::string what) {
  error = StepError{std::move(what), errno};
  return false;
}

// capset(2) with every set empty. Raw syscall: libcap would be a dependency for one call.
int clear_capability_sets() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  return static_cast<int>(::syscall(SYS_capset, &header, data));
}

}  // namespace

bool apply_identity(const IdentityPlan& identity, StepError& error) {
  if (identity.change) {
    if (::setgroups(0, nullptr) != 0) return identity_failed(error, "setgroups(0)");
    if (::setresgid(identity.gid, identity.gid, identity.gid) != 0) {
      return identity_failed(error, "setresgid(" + std::to_string(identity.gid) + ")");
    }
    // Capability numbers run from 0 to the kernel's CAP_LAST_CAP; EINVAL marks the end.
    for (int cap = 0;; ++cap) {
      if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
        if (errno == EINVAL && cap > 0) break;
        return identity_failed(error, "prctl(PR_CAPBSET_DROP, " + std::to_string(cap) + ")");
      }
    }
    if (::setresuid(identity.uid, identity.uid, identity.uid) != 0) {
      return identity_failed(error, "setresuid(" + std::to_string(identity.uid) + ")");
    }
    // Fail closed if anything could still bring uid 0 back.
    uid_t r = 0, e = 0, s = 0;
    if (::getresuid(&r, &e, &s) != 0 || r == 0 || e == 0 || s == 0) {
      errno = EPERM;
      return identity_failed(error, "uid 0 still held after setresuid");
    }
  }
  // PR_CAP_AMBIENT (Linux 4.3); EINVAL on older kernels means there is no ambient set.
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return identity_failed(error, "prctl(PR_CAP_AMBIENT_CLEAR_ALL)");
  }
  if (clear_capability_sets() != 0) return identity_failed(error, "capset(empty)");
  if (identity.no_realtime) {
    const rlimit none{0, 0};
    if (::setrlimit(RLIMIT_RTPRIO, &none) != 0)
      return identity_failed(error, "setrlimit(RLIMIT_RTPRIO, 0)");
    if (::setrlimit(RLIMIT_NICE, &none) != 0)
      return identity_failed(error, "setrlimit(RLIMIT_NICE, 0)");
  }
  if (identity.process_limit != 0) {
    // Only ever lowered: a caller's tighter limit stays (and raising the hard limit needs
    // CAP_SYS_RESOURCE, which the module user no longer holds; nor can the module raise it).
    // fork and clone then answer EAGAIN, as under pids.max.
    rlimit processes{};
    if (::getrlimit(RLIMIT_NPROC, &processes) != 0) {
      return identity_failed(error, "getrlimit(RLIMIT_NPROC)");
    }
    const rlim_t limit = identity.process_limit;
    processes.rlim_cur = std::min(processes.rlim_cur, limit);
    processes.rlim_max = std::min(processes.rlim_max, limit);
    if (::setrlimit(RLIMIT_NPROC, &processes) != 0) {
      return identity_failed(error, "setrlimit(RLIMIT_NPROC, " + std::to_string(limit) + ")");
    }
  }
  // umask(2) cannot fail; inherited across the exec.
  if (identity.umask >= 0) ::umask(static_cast<mode_t>(identity.umask));
  return true;
}

}  // namespace oarbank
