#include "probe/module_user_access.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace oarbank {

int module_user_access_error(const std::string& path, int mode, uid_t uid, gid_t gid) {
  if (::geteuid() != 0) {
    return ::faccessat(AT_FDCWD, path.c_str(), mode, AT_EACCESS) == 0 ? 0 : errno;
  }
  int answer[2];
  if (::pipe2(answer, O_CLOEXEC) != 0) return errno;
  const pid_t child = ::fork();
  if (child < 0) {
    const int err = errno;
    ::close(answer[0]);
    ::close(answer[1]);
    return err;
  }
  if (child == 0) {
    const bool answered = ::setgroups(0, nullptr) == 0 && ::setresgid(gid, gid, gid) == 0 &&
                          ::setresuid(uid, uid, uid) == 0 &&
                          ::faccessat(AT_FDCWD, path.c_str(), mode, AT_EACCESS) == 0;
    const int err = answered ? 0 : errno;
    [[maybe_unused]] auto n = ::write(answer[1], &err, sizeof err);
    ::_exit(0);
  }
  ::close(answer[1]);
  int err = EIO;
  ssize_t got = 0;
  do {
    got = ::read(answer[0], &err, sizeof err);
  } while (got < 0 && errno == EINTR);
  ::close(answer[0]);
  while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
  }
  return got == static_cast<ssize_t>(sizeof err) ? err : EIO;
}

}  // namespace oarbank
