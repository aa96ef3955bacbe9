// Whether the module user could use a directory as the launcher's identity step asks it to
// (apply/launch.cpp, step_identity): access(2) as that user, so that sandbox-check agrees with
// the launch (session 16's review: a work directory root's 0755 was "can run", then 70).
#pragma once

#include <sys/types.h>

#include <string>

namespace oarbank {

// 0 when `uid`/`gid` (no supplementary groups, as the launched module) may access `path` with
// `mode` (R_OK, W_OK, X_OK); else the errno access(2) answered (EACCES, EROFS, ...). As root,
// asked in a child that becomes that user; otherwise `uid` must be this process's own user.
int module_user_access_error(const std::string& path, int mode, uid_t uid, gid_t gid);

}  // namespace oarbank
