// Issue 16: why execve of the module failed, said so that the author knows what to change.
// Called only after the failure, in the sandboxed process (Landlock does not govern stat(2),
// statfs(2) or access(2), and the filter allows them; the file's capabilities are read through
// a descriptor, fgetxattr, as the filter refuses getxattr by path), just before _exit(71).
#pragma once

#include <string>

namespace oarbank {

// The detail after "execve PATH failed: ERRNO": empty when there is nothing to add.
// - ENOENT for a name looked up on the module's PATH: that it was, and the PATH; for a file
//   that is there: its #! interpreter or its ELF loader is missing.
// - EACCES: a directory on the way the module user cannot search, not a regular file, no
//   execute permission for the module user (with owner, mode and the fix), a filesystem
//   mounted noexec, or else a refusal by the sandbox (Landlock).
// - EPERM for a file with file capabilities (security.capability).
// - EAGAIN: the module's uid already at its RLIMIT_NPROC (processes outside the run hold it).
std::string exec_failure_detail(const std::string& executable, bool looked_up_on_path,
                                const std::string& module_path, int err);

}  // namespace oarbank
