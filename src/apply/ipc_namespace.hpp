// The module's own IPC namespace (issue 12; docs/sandbox-run.md "What a module sees"): entered
// by sandbox-run's child, as root, before the launcher's steps. Its SysV objects and POSIX
// message queues are the module's alone and end with its last process.
#pragma once

#include <cstdint>

namespace oarbank {

// unshare(CLONE_NEWIPC), then a Landlock rule on the new namespace's mqueue filesystem in the
// prepared ruleset (-1: none): POSIX message queues are files of that filesystem, reached
// through a mount of the kernel's own that no path of the policy names, so Landlock would
// refuse mq_open (EACCES) without it. The rule grants, of `handled_fs`, reading, writing,
// making and removing regular files there, which is all a queue is. Returns 0, or the errno
// with `*what` naming the call. Async-signal-safe: the child shares its parent's memory.
int enter_own_ipc_namespace(int ruleset_fd, std::uint64_t handled_fs, const char** what);

}  // namespace oarbank
