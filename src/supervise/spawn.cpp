#include "supervise/spawn.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "plan/launch_steps.hpp"
#include "plan/status_line.hpp"
#include "sys/error.hpp"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL  // Linux 5.7
#endif

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
// clone3 onto a stack of the caller's: the child runs fn(arg) there and never returns into
// this frame (it execs or exits). With CLONE_VM | CLONE_VFORK the child shares the parent's
// memory until its exec, as posix_spawn does: no page tables to copy and no copy-on-write
// faults, which cost milliseconds on a virtualized machine (docs/performance.md). A raw
// syscall() cannot do this: its return would pop from the new, empty stack. Sanitizer builds
// take the plain clone3 below: AddressSanitizer cannot follow a stack it did not allocate.
//   long oarbank_clone3_on_stack(clone_args*, size_t, void (*fn)(void*), void* arg)
asm(R"(
  .text
  .globl oarbank_clone3_on_stack
  .type oarbank_clone3_on_stack, @function
oarbank_clone3_on_stack:
  mov %rdx, %r8
  mov %rcx, %r9
  mov $435, %eax
  syscall
  test %rax, %rax
  jz 1f
  ret
1:
  xor %ebp, %ebp
  mov %r9, %rdi
  call *%r8
  mov $127, %edi
  mov $60, %eax
  syscall
  hlt
  .size oarbank_clone3_on_stack, .-oarbank_clone3_on_stack
)");
extern "C" long oarbank_clone3_on_stack(clone_args* args, std::size_t size, void (*fn)(void*),
                                        void* arg);
#endif

// Linux 6.9's pidfd_send_signal flag; Debian 12's headers lack it.
#ifndef PIDFD_SIGNAL_PROCESS_GROUP
#define PIDFD_SIGNAL_PROCESS_GROUP (1U << 2)
#endif

namespace oarbank {
namespace {

[[noreturn]] void run_child(const SpawnRequest& request, int join_cgroup_procs_fd,
                            int session_ready_fd) {
  if (request.terminal_fd >= 0) {
    // On a terminal: the module's pty's session, whose leader is sandbox-run (terminal.hpp).
    ::setpgid(0, 0);
  } else if (::setsid() < 0) {
    // Attack review (session 15): in the caller's session a module's process could join the
    // session leader's group (setpgid is allowed in a leaf), stop itself, and leave that group
    // orphaned, and the kernel sent SIGHUP and SIGCONT to the caller's shell or the service's
    // main process. In a session of its own, every group it can join is its own.
    static constexpr auto kLine = step_failure_status_line(
        exit_code_for(ErrorKind::StepFailed), LaunchStep::Spawn, "setsid of the module");
    [[maybe_unused]] auto n = ::write(request.status_write_fd, kLine.data(), kLine.size);
    ::_exit(exit_code_for(ErrorKind::StepFailed));
  }
  // The parent reads this pipe's end of file before it goes on (where it does not wait for the
  // exec: CLONE_VFORK), so that it never signals the group before there is one.
  if (session_ready_fd >= 0) ::close(session_ready_fd);
  if (join_cgroup_procs_fd >= 0) {
    if (::write(join_cgroup_procs_fd, "0", 1) != 1) {
      // Built at compile time: this child may share its parent's memory, so no allocation.
      static constexpr auto kLine =
          step_failure_status_line(exit_code_for(ErrorKind::StepFailed), LaunchStep::Cgroup,
                                   "joining the leaf (cgroup.procs)");
      [[maybe_unused]] auto n = ::write(request.status_write_fd, kLine.data(), kLine.size);
      ::_exit(exit_code_for(ErrorKind::StepFailed));
    }
  }
  if (request.terminal_fd >= 0) {
    // Fail closed: a descriptor left as it was would be the operator's terminal.
    for (int fd = 0; fd < 3; ++fd) {
      if ((request.terminal_fds & (1U << fd)) != 0 && ::dup2(request.terminal_fd, fd) != fd) {
        static constexpr auto kLine = step_failure_status_line(
            exit_code_for(ErrorKind::StepFailed), LaunchStep::Terminal, "dup2 of the module's pty");
        [[maybe_unused]] auto n = ::write(request.status_write_fd, kLine.data(), kLine.size);
        ::_exit(exit_code_for(ErrorKind::StepFailed));
      }
    }
    ::tcsetpgrp(request.terminal_fd, ::getpgrp());
  }
  // Without CLONE_SIGHAND the child's dispositions are its own copy: the parent keeps its own.
  if (request.child_dispositions != nullptr) {
    ::sigaction(SIGPIPE, &request.child_dispositions->pipe, nullptr);
    ::sigaction(SIGXFSZ, &request.child_dispositions->file_size, nullptr);
  }
  if (request.child_mask != nullptr) ::sigprocmask(SIG_SETMASK, request.child_mask, nullptr);
  request.child_main(request.context);
  ::_exit(exit_code_for(ErrorKind::Internal));  // child_main execs or exits: fail closed
}

}  // namespace

int signal_process_group(int leader_pidfd, pid_t group, int sig) {
  if (leader_pidfd >= 0 && ::syscall(SYS_pidfd_send_signal, leader_pidfd, sig, nullptr,
                                     PIDFD_SIGNAL_PROCESS_GROUP) == 0) {
    return 0;
  }
  if (leader_pidfd >= 0 && errno != EINVAL && errno != ENOSYS) return errno;
  return ::kill(-group, sig) == 0 ? 0 : errno;
}

namespace {

struct SessionReadyPipe {
  UniqueFd read;
  UniqueFd write;
};

// Where the parent does not wait for the child's exec (no CLONE_VFORK): see run_child.
SessionReadyPipe make_session_ready_pipe() {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) throw step_error(LaunchStep::Spawn, "pipe2", errno);
  SessionReadyPipe pipe;
  pipe.read.reset(ends[0]);
  pipe.write.reset(ends[1]);
  return pipe;
}

}  // namespace

Spawned spawn_launcher(const SpawnRequest& request) {
  Spawned spawned;
  SessionReadyPipe session_ready;
  int pidfd = -1;
  clone_args args{};
  args.flags = CLONE_PIDFD;
  args.pidfd = reinterpret_cast<std::uintptr_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  if (request.cgroup_dir_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<std::uint64_t>(request.cgroup_dir_fd);
  }
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
  // The child's stack while it shares our memory (CLONE_VM); CLONE_VFORK suspends this
  // thread until the child's exec or exit, so the stack is free again once clone3 returns.
  // The caller has a single thread (spawn.hpp), so nothing else runs on the shared memory.
  constexpr std::size_t kChildStack = 256 * 1024;
  void* stack = ::mmap(nullptr, kChildStack, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    throw step_error(LaunchStep::Spawn, "mmap of the child's stack", errno);
  }
  args.flags |= CLONE_VM | CLONE_VFORK;
  args.stack = reinterpret_cast<std::uintptr_t>(stack);
  args.stack_size = kChildStack;
  long pid = oarbank_clone3_on_stack(
      &args, sizeof args,
      [](void* raw) { run_child(*static_cast<const SpawnRequest*>(raw), -1, -1); },
      const_cast<SpawnRequest*>(&request));
  ::munmap(stack, kChildStack);
  if (pid < 0) {
    errno = static_cast<int>(-pid);
    pid = -1;
  }
#else
  session_ready = make_session_ready_pipe();
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) run_child(request, -1, session_ready.write.get());
#endif
  if (pid > 0) {
    spawned.pid = static_cast<pid_t>(pid);
    spawned.pidfd.reset(pidfd);
  } else {
    // ENOSYS: no clone3 (before 5.3, or an outer filter answering like ours does); E2BIG or
    // EINVAL: no CLONE_INTO_CGROUP (before 5.7). Anything else is a real failure.
    int err = errno;
    if (err != ENOSYS && err != E2BIG && err != EINVAL) {
      throw step_error(LaunchStep::Spawn, "clone3", err);
    }
    UniqueFd procs;
    if (request.cgroup_dir_fd >= 0) {
      procs.reset(::openat(request.cgroup_dir_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC));
      if (!procs.valid()) {
        throw step_error(LaunchStep::Cgroup, "open cgroup.procs of the leaf", errno);
      }
    }
    if (!session_ready.read.valid()) session_ready = make_session_ready_pipe();
    pid_t child = ::fork();
    if (child < 0) throw step_error(LaunchStep::Spawn, "fork", errno);
    if (child == 0) run_child(request, procs.get(), session_ready.write.get());
    spawned.pid = child;
    spawned.pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, child, 0)));
    if (!spawned.pidfd.valid()) {
      int open_err = errno;
      ::kill(child, SIGKILL);
      throw step_error(LaunchStep::Spawn, "pidfd_open", open_err);
    }
  }
  if (request.terminal_fd >= 0) {
    // Both sides set the group, so that it is set before either goes on (the classic race).
    ::setpgid(spawned.pid, spawned.pid);
  } else if (session_ready.read.valid()) {
    // The child's session (and group) is made once its end of the pipe is closed.
    session_ready.write.reset();
    char byte;
    while (::read(session_ready.read.get(), &byte, 1) < 0 && errno == EINTR) {
    }
  }
  return spawned;
}

}  // namespace oarbank
