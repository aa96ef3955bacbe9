// Opening paths without following symbolic links: for what the supervisor opens as root on
// someone else's word (a policy's writable directories, the operator's --result and log files,
// the run state). A symbolic link in a place another user can write (/tmp) would otherwise
// send root's open wherever that user likes.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "sys/unique_fd.hpp"

namespace oarbank {

// openat2(dirfd, path, {flags | O_CLOEXEC, mode, RESOLVE_NO_SYMLINKS}) (Linux 5.6): no
// component of `path` may be a symbolic link (ELOOP), /proc's magic links included. Where
// openat2 answers ENOSYS (an older kernel, or a container's filter), the path is walked one
// component at a time with O_NOFOLLOW, which refuses the same links. -1 and errno on failure.
int open_no_symlinks(int dirfd, const std::string& path, int flags, mode_t mode = 0);

// The fallback of open_no_symlinks alone (tests call it directly).
int open_no_symlinks_by_walk(int dirfd, const std::string& path, int flags, mode_t mode);

// A file the supervisor writes for the operator (sandbox-run --result, the proxy's log):
// opened write-only (created with `mode` when missing; appending, or truncated once it is known
// to be a regular file), through no symbolic link at any component, and only if it is a
// regular file of the caller's or root's with a single link (not one another user made first,
// nor a second name of another file). O_NONBLOCK while opening: a FIFO without a reader answers
// ENXIO at once instead of blocking, and one with a reader (or a device) is refused by the fstat
// that follows. `problem` is "" on success, else what is wrong (the path named), and the descriptor
// invalid.
struct OperatorFile {
  UniqueFd fd;
  std::string problem;
};
OperatorFile open_operator_file(const std::string& path, bool append, mode_t mode);

// The names between the slashes of `path`, empty ones left out ("/a//b/" -> a, b).
std::vector<std::string> path_components(const std::string& path);

// The first component of `path` that is a symbolic link (lstat), or "": for messages only.
std::string first_symlink_component(const std::string& path);

}  // namespace oarbank
