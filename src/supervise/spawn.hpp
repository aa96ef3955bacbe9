// Starts the launcher (sandbox-exec) as a child: in a new process group and, where a leaf is
// given, born inside it (clone3 with CLONE_INTO_CGROUP, Linux 5.7), else joining the leaf
// before its exec (fork, then a write to cgroup.procs: for a kernel or an outer seccomp
// filter without clone3).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include "sys/unique_fd.hpp"

namespace oarbank {

struct SpawnRequest {
  const char* path = nullptr;  // the launcher binary
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int cgroup_dir_fd = -1;        // the leaf, or -1 for no cgroup
  int status_write_fd = -1;      // the status channel's write end, kept open across this exec
  const sigset_t* child_mask = nullptr;  // the signal mask the launcher starts with
};

struct Spawned {
  pid_t pid = -1;
  UniqueFd pidfd;
  bool born_in_cgroup = false;  // clone3 placed it (else it joined before its exec)
};

// Throws Error(StepFailed) naming the call that failed.
Spawned spawn_launcher(const SpawnRequest& request);

}  // namespace oarbank
