#include "supervise/spawn.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sys/error.hpp"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL  // Linux 5.7
#endif

namespace oarbank {
namespace {

[[noreturn]] void run_child(const SpawnRequest& request, int join_cgroup_procs_fd) {
  ::setpgid(0, 0);
  if (join_cgroup_procs_fd >= 0) {
    if (::write(join_cgroup_procs_fd, "0", 1) != 1) {
      const char message[] = "70\tstep cgroup failed: joining the leaf (cgroup.procs)\n";
      [[maybe_unused]] auto n = ::write(request.status_write_fd, message, sizeof message - 1);
      ::_exit(kExitSoftware);
    }
  }
  if (request.child_mask != nullptr) ::sigprocmask(SIG_SETMASK, request.child_mask, nullptr);
  request.child_main(request.context);
  ::_exit(kExitSoftware);
}

}  // namespace

Spawned spawn_launcher(const SpawnRequest& request) {
  Spawned spawned;
  int pidfd = -1;
  clone_args args{};
  args.flags = CLONE_PIDFD;
  args.pidfd = reinterpret_cast<std::uintptr_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  if (request.cgroup_dir_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<std::uint64_t>(request.cgroup_dir_fd);
  }
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) run_child(request, -1);
  if (pid > 0) {
    spawned.pid = static_cast<pid_t>(pid);
    spawned.pidfd.reset(pidfd);
    spawned.born_in_cgroup = request.cgroup_dir_fd >= 0;
  } else {
    // ENOSYS: no clone3 (before 5.3, or an outer filter answering like ours does); E2BIG or
    // EINVAL: no CLONE_INTO_CGROUP (before 5.7). Anything else is a real failure.
    int err = errno;
    if (err != ENOSYS && err != E2BIG && err != EINVAL) {
      throw Error(ErrorKind::StepFailed, "step spawn failed: clone3: " + errno_text(err));
    }
    UniqueFd procs;
    if (request.cgroup_dir_fd >= 0) {
      procs.reset(::openat(request.cgroup_dir_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC));
      if (!procs.valid()) {
        throw Error(ErrorKind::StepFailed,
                    "step cgroup failed: open cgroup.procs of the leaf: " + errno_text(errno));
      }
    }
    pid_t child = ::fork();
    if (child < 0) throw Error(ErrorKind::StepFailed, "step spawn failed: fork: " + errno_text(errno));
    if (child == 0) run_child(request, procs.get());
    spawned.pid = child;
    spawned.pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, child, 0)));
    if (!spawned.pidfd.valid()) {
      int open_err = errno;
      ::kill(child, SIGKILL);
      throw Error(ErrorKind::StepFailed, "step spawn failed: pidfd_open: " + errno_text(open_err));
    }
  }
  // Both sides set the group, so that it is set before either goes on (the classic race).
  ::setpgid(spawned.pid, spawned.pid);
  return spawned;
}

}  // namespace oarbank
