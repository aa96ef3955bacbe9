// Issue 10: which directories a module may be given to write, and which may lie above them.
// Pure: it judges what fstat said, so the unit tests cover every case.
//
// A writable path (work, temp, a data entry) and every directory above it, "/" included, must
// belong to root or the module user, and not be writable by group or others: anyone else who
// can write there could read and alter the module's output, or put another directory (theirs)
// in its place. A directory above may be writable by others only when it is sticky (as /tmp):
// others cannot then rename or remove what belongs to root or the module user in it, and the
// next component must itself belong to one of them. The writable path itself is never excused
// by a sticky bit (/tmp itself is no work directory). The module user may own any of them:
// it can already write all the module can.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace oarbank {

struct PathOwnership {
  uid_t uid = 0;
  mode_t mode = 0;    // st_mode: type and permission bits
  nlink_t links = 1;  // st_nlink: a writable file with another name may be someone else's file
};

// `component`: the path judged (the writable path itself when `is_writable_path`, else a
// directory above `writable_path`). Returns what is wrong, as one line's text naming the path,
// its owner and mode, or nothing when it may be used.
std::optional<std::string> writable_path_problem(const std::string& component,
                                                 const PathOwnership& owner, bool is_writable_path,
                                                 const std::string& writable_path,
                                                 uid_t module_uid);

// The line for a component that is a symbolic link (openat2 answered ELOOP).
std::string writable_path_symlink_problem(const std::string& component,
                                          const std::string& writable_path);

// Issue 16: what the module user needs of each path the policy gives it to write. Landlock
// grants all three every file right, but the module user's own permissions decide too: `work`
// and `temp` must be readable, writable and searchable (a regular file: readable and
// writable), a `data` entry only readable and searchable (read-only input, root's 0755, is
// fine). `role` is "work", "data" or "temp". Returns the access(2) mode to ask for.
int writable_access_mode(const std::string& role, bool is_directory);

// The line when the module user lacks that access: the user (uid), the access it needs, the
// path's owner and mode, the errno's name, and the fix (for EACCES; another errno, EROFS say,
// is not a matter of permissions). Pure: the unit tests cover every case.
std::string writable_access_problem(const std::string& role, const std::string& path,
                                    const PathOwnership& owner, uid_t module_uid, int err);

}  // namespace oarbank
