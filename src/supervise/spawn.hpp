// Starts the launcher as a child: in a new process group and, where a leaf is given, born
// inside it (clone3 with CLONE_INTO_CGROUP, Linux 5.7), else joining the leaf before the
// launch (fork, then a write to cgroup.procs: for a kernel or an outer seccomp filter without
// clone3). The child runs `child_main`, the launcher's steps, which end in the module's exec.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include "sys/unique_fd.hpp"

namespace oarbank {

// The dispositions of the signals a supervisor ignores for itself because the module shares
// its stdout and stderr (module_run.cpp): the caller's, given back to the launcher.
struct CallerDispositions {
  struct sigaction pipe {};       // SIGPIPE
  struct sigaction file_size {};  // SIGXFSZ
};

struct SpawnRequest {
  int cgroup_dir_fd = -1;    // the leaf, or -1 for no cgroup
  int status_write_fd = -1;  // the status channel's write end, for a failure to join the leaf
  // The module's pty (terminal.hpp), or -1: dup2'd onto the descriptors 0-2 whose bit is set
  // in `terminal_fds`, and its foreground made the child's new group, before the launcher's
  // steps (the caller's mask, which the child still has then, blocks SIGTTOU).
  int terminal_fd = -1;
  unsigned terminal_fds = 0;
  const sigset_t* child_mask = nullptr;  // the signal mask the launcher starts with
  // SIGPIPE's and SIGXFSZ's dispositions for the launcher, where this process changed its own.
  const CallerDispositions* child_dispositions = nullptr;
  // Runs in the child, in its group and leaf, with `child_mask` set; must not return (it
  // execs the module or _exits). This process must have no other thread: the child is a
  // copy of it, locks included.
  void (*child_main)(void* context) = nullptr;
  void* context = nullptr;
};

struct Spawned {
  pid_t pid = -1;
  UniqueFd pidfd;
};

// Throws Error(StepFailed) naming the call that failed.
Spawned spawn_launcher(const SpawnRequest& request);

// Sends `sig` to the process group `group` whose leader `leader_pidfd` refers to, through the
// pidfd (PIDFD_SIGNAL_PROCESS_GROUP, Linux 6.9): it names that group even after the leader
// was reaped, never one that reused the number. Before 6.9 (EINVAL), or without a pidfd
// (-1): kill(-group). 0 or an errno.
int signal_process_group(int leader_pidfd, pid_t group, int sig);

}  // namespace oarbank
