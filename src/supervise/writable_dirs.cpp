#include "supervise/writable_dirs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "sys/error.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {
namespace {

[[noreturn]] void fail(const std::string& what, int err) {
  throw Error(ErrorKind::StepFailed, "step directories failed: " + what + ": " + errno_text(err));
}

}  // namespace

std::vector<std::string> make_writable_dirs(const std::vector<std::string>& dirs, uid_t uid,
                                            gid_t gid, bool chown) {
  std::vector<std::string> created;
  for (const auto& dir : dirs) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) == 0) continue;  // exists: the launcher checks it is usable
    // Walk from "/" one component at a time, never through a symbolic link: a parent in a
    // world-writable place (/tmp) cannot redirect where the directory is made.
    UniqueFd at(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    std::string sofar;
    std::size_t start = 1;
    while (start <= dir.size()) {
      std::size_t end = dir.find('/', start);
      if (end == std::string::npos) end = dir.size();
      const std::string name = dir.substr(start, end - start);
      start = end + 1;
      if (name.empty()) continue;
      sofar += "/" + name;
      const bool last = end == dir.size();
      if (::mkdirat(at.get(), name.c_str(), last ? 0700 : 0755) == 0) {
        created.push_back(sofar);
        if (last && chown && ::fchownat(at.get(), name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0) {
          fail("chown " + sofar, errno);
        }
      } else if (errno != EEXIST) {
        fail("mkdir " + sofar, errno);
      }
      UniqueFd next(::openat(at.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!next.valid()) fail("open " + sofar + " (a symbolic link or not a directory?)", errno);
      at = std::move(next);
    }
  }
  return created;
}

void remove_created_dirs(const std::vector<std::string>& created) {
  for (auto it = created.rbegin(); it != created.rend(); ++it) ::rmdir(it->c_str());
}

}  // namespace oarbank
