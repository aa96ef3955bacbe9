#include "apply/descriptors.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace oarbank {

bool descriptor_is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

bool ensure_standard_descriptors(StepError& error) {
  for (int fd = 0; fd <= 2; ++fd) {
    if (descriptor_is_open(fd)) continue;
    int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd < 0) {
      error = {"open(/dev/null) for a closed standard descriptor", errno};
      return false;
    }
    if (null_fd != fd) {
      // open() returns the lowest free number, so this only happens if a lower one is taken.
      if (::dup2(null_fd, fd) < 0) {
        error = {"dup2(/dev/null)", errno};
        return false;
      }
      ::close(null_fd);
    }
  }
  return true;
}

namespace {

// Linux before 5.11 has no CLOSE_RANGE_CLOEXEC: walk /proc/self/fd instead.
bool mark_cloexec_by_listing(StepError& error) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) {
    error = {"opendir(/proc/self/fd)", errno};
    return false;
  }
  const int own = ::dirfd(dir);
  while (dirent* entry = ::readdir(dir)) {
    int fd = std::atoi(entry->d_name);
    if (fd >= 3 && fd != own) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  ::closedir(dir);
  return true;
}

}  // namespace

bool close_on_exec_except(const std::vector<int>& keep, StepError& error) {
  if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    if (errno != ENOSYS && errno != EINVAL) {
      error = {"close_range(3, ~0, CLOSE_RANGE_CLOEXEC)", errno};
      return false;
    }
    if (!mark_cloexec_by_listing(error)) return false;
  }
  for (int fd : keep) {
    if (::fcntl(fd, F_SETFD, 0) != 0) {
      error = {"fcntl(" + std::to_string(fd) + ", F_SETFD, 0) for --keep-fd", errno};
      return false;
    }
  }
  return true;
}

void close_all_but(std::vector<int> keep) {
  std::sort(keep.begin(), keep.end());
  unsigned int from = 3;
  for (int fd : keep) {
    if (fd < 3) continue;
    if (static_cast<unsigned int>(fd) > from) {
      ::syscall(SYS_close_range, from, static_cast<unsigned int>(fd) - 1, 0U);
    }
    from = static_cast<unsigned int>(fd) + 1;
  }
  ::syscall(SYS_close_range, from, ~0U, 0U);
}

}  // namespace oarbank
