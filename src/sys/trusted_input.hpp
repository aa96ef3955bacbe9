// What the launcher reads on the operator's word (the policy, the node configuration) must be
// the operator's. Attack review (session 14): both were read whatever their owner and mode, so
// a second local user who could write either (or the directory above it) chose what root's
// sandbox-run enforced: `module_users: null`, `writable_roots: ["/"]`, a wider runtime, egress.
// The rule is OpenSSH's StrictModes, the same one open_operator_file applies to what the
// supervisor writes (sys/safe_open.hpp): owned by root or by the caller, writable by neither
// group nor others.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <string>

namespace oarbank {

// nullopt when the file at `path`, opened as `fd`, whose fstat is `st`, is root's or the
// caller's (real uid) and writable by neither group nor others, and so is every directory the
// path is resolved through, except that a sticky directory (/tmp) may be writable by all:
// there no other user can rename or remove a file that is not theirs. The path is walked one
// component at a time as the kernel resolves it: each symbolic link on the way must be root's
// or the caller's too (in a sticky directory another user's link would be theirs to point at
// any file of root's), and its target is walked the same way. The file the walk ends at must
// be the one opened. Else one line saying what is wrong, naming the path; what cannot be judged
// (an lstat that fails) is wrong too.
std::optional<std::string> untrusted_input_problem(const std::string& path, int fd,
                                                   const struct stat& st);

// Whether `st` is a regular file of this process's effective user that neither group nor
// others may write: what a file this process wrote for itself (the module user registry's, the
// namespace stock's address) must be before it is believed.
inline bool own_unshared_regular_file(const struct stat& st) {
  return S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

}  // namespace oarbank
