#include "apply/identity.hpp"

#include <grp.h>
#include <linux/capability.h>
#include <linux/ioprio.h>
#include <sched.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace oarbank {
namespace {

// PR_SET_MEMORY_MERGE and PR_GET_MEMORY_MERGE (Linux 6.4), which Debian 12's headers lack;
// their values are the kernel's ABI.
constexpr int kPrSetMemoryMerge = 67;
constexpr int kPrGetMemoryMerge = 68;

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

// What the caller's process carries across the exec that the filter would never let the module
// choose for itself (attack review, session 16: `chrt -f 10 nice -n -5 ionice -c1 setarch -R
// sandbox-exec ...` handed all four to the module). Lowering each is allowed to anyone, so this
// runs after the uid change too. A real-time policy goes back to SCHED_OTHER (a SCHED_FIFO busy
// loop starves the node and cpu.max governs no real-time task); a negative nice to 0; the
// real-time I/O class to best effort at the default level; the personality to its plain base
// (PER_LINUX, or PER_LINUX32 if the caller ran as one), without ADDR_NO_RANDOMIZE,
// READ_IMPLIES_EXEC or any other flag: the filter lets the module set only those two values.
bool reset_scheduling(StepError& error) {
  const int policy = ::sched_getscheduler(0);
  if (policy < 0) return identity_failed(error, "sched_getscheduler");
  // SCHED_RESET_ON_FORK rides along in the answer and stays (clearing it needs CAP_SYS_NICE;
  // a unit's CPUSchedulingResetOnFork= set it): only the policy itself is judged.
  const int base = policy & ~SCHED_RESET_ON_FORK;
  if (base != SCHED_OTHER && base != SCHED_BATCH && base != SCHED_IDLE) {
    const sched_param normal{};
    if (::sched_setscheduler(0, SCHED_OTHER | (policy & SCHED_RESET_ON_FORK), &normal) != 0) {
      return identity_failed(error, "sched_setscheduler(SCHED_OTHER)");
    }
  }
  errno = 0;
  const int nice_now = ::getpriority(PRIO_PROCESS, 0);
  if (nice_now == -1 && errno != 0) return identity_failed(error, "getpriority");
  if (nice_now < 0 && ::setpriority(PRIO_PROCESS, 0, 0) != 0) {
    return identity_failed(error, "setpriority(PRIO_PROCESS, 0, 0)");
  }
  const long io = ::syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0);
  if (io < 0) return identity_failed(error, "ioprio_get");
  if (IOPRIO_PRIO_CLASS(io) == IOPRIO_CLASS_RT &&
      ::syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 4)) !=
          0) {
    return identity_failed(error, "ioprio_set(IOPRIO_CLASS_BE)");
  }
  const int persona = ::personality(0xffffffffU);
  if (persona < 0) return identity_failed(error, "personality(query)");
  const unsigned long plain = (persona & PER_MASK) == PER_LINUX32 ? PER_LINUX32 : PER_LINUX;
  if (static_cast<unsigned long>(persona) != plain && ::personality(plain) < 0) {
    return identity_failed(error, "personality(PER_LINUX)");
  }
  return true;
}

}  // namespace

bool apply_identity(const IdentityPlan& identity, StepError& error, bool real_uid_last) {
  // Session 19's review: the whole-process KSM flag (PR_SET_MEMORY_MERGE, Linux 6.4; a caller
  // under systemd's MemoryKSM=yes has it) survives fork and exec, and would make all of the
  // module's memory mergeable without a call the filter sees (docs/seccomp.md). Cleared where
  // it is set; asked first, so that a kernel without it or without KSM (EINVAL), or an outer
  // filter that refuses the call, changes nothing.
  if (::prctl(kPrGetMemoryMerge, 0, 0, 0, 0) == 1 && ::prctl(kPrSetMemoryMerge, 0, 0, 0, 0) != 0) {
    return identity_failed(error, "prctl(PR_SET_MEMORY_MERGE, 0)");
  }
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
    const uid_t real = real_uid_last ? static_cast<uid_t>(-1) : identity.uid;
    if (::setresuid(real, identity.uid, identity.uid) != 0) {
      return identity_failed(error, "setresuid(" + std::to_string(identity.uid) + ")");
    }
    // Fail closed if anything could still bring uid 0 back (but the real uid, for now, where
    // finish_identity comes after the listener's send).
    uid_t r = 0, e = 0, s = 0;
    if (::getresuid(&r, &e, &s) != 0 || (r == 0 && !real_uid_last) || e == 0 || s == 0) {
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
    if (!reset_scheduling(error)) return false;
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

bool finish_identity(const IdentityPlan& identity, StepError& error) {
  if (!identity.change) return true;
  // Unprivileged now: setresuid may set the real uid to the effective one.
  if (::setresuid(identity.uid, identity.uid, identity.uid) != 0) {
    return identity_failed(error,
                           "setresuid(" + std::to_string(identity.uid) + ") of the real uid");
  }
  uid_t r = 0, e = 0, s = 0;
  if (::getresuid(&r, &e, &s) != 0 || r != identity.uid || e != identity.uid || s != identity.uid) {
    errno = EPERM;
    return identity_failed(error, "uid 0 still held after setresuid of the real uid");
  }
  return true;
}

}  // namespace oarbank
