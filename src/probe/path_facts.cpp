#include "probe/path_facts.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace oarbank {
namespace {

int open_path(const std::string& path) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how));
  // Before Linux 5.6 there is no openat2; /proc's magic links are then not told apart.
  if (fd < 0 && errno == ENOSYS) fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  return fd;
}

std::string resolved_path(int fd, const std::string& fallback) {
  char buffer[4096];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = ::readlink(link.c_str(), buffer, sizeof buffer - 1);
  if (n <= 0) return fallback;
  return std::string(buffer, static_cast<std::size_t>(n));
}

}  // namespace

PathKind OpenedPaths::kind(const std::string& path) const {
  auto it = entries_.find(path);
  if (it != entries_.end()) return it->second.kind;
  Entry entry;
  entry.fd.reset(open_path(path));
  struct stat st {};
  if (entry.fd.valid() && ::fstat(entry.fd.get(), &st) == 0) {
    entry.kind = S_ISDIR(st.st_mode) ? PathKind::Directory : PathKind::File;
    entry.canonical = resolved_path(entry.fd.get(), path);
  } else {
    entry.fd.reset();
  }
  PathKind result = entry.kind;
  entries_.emplace(path, std::move(entry));
  return result;
}

std::string OpenedPaths::canonical(const std::string& path) const {
  auto it = entries_.find(path);
  return it == entries_.end() || it->second.canonical.empty() ? path : it->second.canonical;
}

int OpenedPaths::fd(const std::string& path) const {
  auto it = entries_.find(path);
  return it == entries_.end() ? -1 : it->second.fd.get();
}

}  // namespace oarbank
