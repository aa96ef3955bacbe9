#include "sys/safe_open.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "sys/error.hpp"

namespace oarbank {

std::vector<std::string> path_components(const std::string& path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

namespace {

const char* file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

}  // namespace

int open_no_symlinks_by_walk(int dirfd, const std::string& path, int flags, mode_t mode) {
  const auto names = path_components(path);
  UniqueFd at(::open(path.starts_with("/") ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!path.starts_with("/") && dirfd != AT_FDCWD) at.reset(::fcntl(dirfd, F_DUPFD_CLOEXEC, 3));
  if (!at.valid()) return -1;
  if (names.empty()) return ::openat(at.get(), ".", flags | O_CLOEXEC, mode);
  for (std::size_t i = 0; i + 1 < names.size(); ++i) {
    // O_PATH | O_NOFOLLOW opens a symbolic link itself: fstat tells it apart.
    UniqueFd next(::openat(at.get(), names[i].c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid()) return -1;
    struct stat st {};
    if (::fstat(next.get(), &st) != 0) return -1;
    if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
      errno = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
      return -1;
    }
    at = std::move(next);
  }
  UniqueFd last(::openat(at.get(), names.back().c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!last.valid()) return -1;  // O_NOFOLLOW: ELOOP for a link, unless O_PATH (below)
  if ((flags & O_PATH) != 0) {
    struct stat st {};
    if (::fstat(last.get(), &st) != 0) return -1;
    if (S_ISLNK(st.st_mode)) {
      errno = ELOOP;
      return -1;
    }
  }
  return last.release();
}

int open_no_symlinks(int dirfd, const std::string& path, int flags, mode_t mode) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
  // openat2 refuses a mode without O_CREAT or O_TMPFILE (EINVAL).
  how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0;
  how.resolve = RESOLVE_NO_SYMLINKS;
  const int fd = static_cast<int>(::syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how));
  if (fd >= 0 || errno != ENOSYS) return fd;
  return open_no_symlinks_by_walk(dirfd, path, flags, mode);
}

std::string first_symlink_component(const std::string& path) {
  std::string sofar = path.starts_with("/") ? "" : ".";
  for (const auto& name : path_components(path)) {
    sofar += "/" + name;
    struct stat st {};
    if (::lstat(sofar.c_str(), &st) != 0) return "";
    if (S_ISLNK(st.st_mode)) return sofar;
  }
  return "";
}

OperatorFile open_operator_file(const std::string& path, bool append, mode_t mode) {
  OperatorFile out;
  const int flags = O_WRONLY | O_CREAT | O_NOCTTY | O_NONBLOCK | (append ? O_APPEND : 0);
  UniqueFd fd(open_no_symlinks(AT_FDCWD, path, flags, mode));
  if (!fd.valid()) {
    const int err = errno;
    if (err == ELOOP) {
      const std::string link = first_symlink_component(path);
      out.problem = (link.empty() || link == path ? path : link + " (in " + path + ")") +
                    " is a symbolic link; files written for the operator are opened without "
                    "following links";
    } else if (err == ENXIO) {
      // O_NONBLOCK | O_WRONLY: a FIFO without a reader, a socket, or a device without a driver.
      out.problem = path + " is not a regular file (a FIFO, a socket or a device): refused";
    } else {
      out.problem = path + ": " + errno_text(err);
    }
    return out;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    out.problem = path + ": fstat: " + errno_text(errno);
    return out;
  }
  if (!S_ISREG(st.st_mode)) {
    out.problem = path + " is " + file_type_name(st.st_mode) + ", not a regular file: refused";
    return out;
  }
  // A file another user made first (in /tmp, mode 0666) would let them read and rewrite what
  // is written for the operator (a forged result) as surely as a link of theirs; a second
  // hard link would carry the truncation or the lines to another file too (a node without
  // fs.protected_hardlinks lets anyone link root's files). Both refused before a byte changes.
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    out.problem = fmt::format(
        "{} belongs to uid {} (mode {:04o}); files written for the operator must belong to "
        "the caller or root: refused",
        path, st.st_uid, static_cast<unsigned>(st.st_mode & 07777));
    return out;
  }
  // One of the caller's or root's that others may write (a /tmp file made 0666 earlier)
  // lets anyone rewrite it after the run, or keep a descriptor of it open from before:
  // refused too (attack review).
  if ((st.st_mode & 022) != 0) {
    out.problem = fmt::format(
        "{} is writable by group or others (mode {:04o}); files written for the operator must "
        "be writable by their owner alone: refused",
        path, static_cast<unsigned>(st.st_mode & 07777));
    return out;
  }
  if (st.st_nlink > 1) {
    out.problem =
        fmt::format("{} has {} hard links; files written for the operator must have one: refused",
                    path, static_cast<unsigned long>(st.st_nlink));
    return out;
  }
  const int status = ::fcntl(fd.get(), F_GETFL);
  if (status < 0 || ::fcntl(fd.get(), F_SETFL, status & ~O_NONBLOCK) != 0) {
    out.problem = path + ": fcntl(F_SETFL): " + errno_text(errno);
    return out;
  }
  // Truncated only now that it is known to be a regular file.
  if (!append && ::ftruncate(fd.get(), 0) != 0) {
    out.problem = path + ": ftruncate: " + errno_text(errno);
    return out;
  }
  out.fd = std::move(fd);
  return out;
}

}  // namespace oarbank
