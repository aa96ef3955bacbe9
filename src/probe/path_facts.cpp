#include "probe/path_facts.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <string_view>

#include "probe/writable_path_rule.hpp"
#include "sys/error.hpp"
#include "sys/safe_open.hpp"

namespace oarbank {
namespace {

int open_path(const std::string& path, std::uint64_t resolve) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = resolve;
  int fd = static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how));
  // Before Linux 5.6 there is no openat2; /proc's magic links are then not told apart. Not
  // for RESOLVE_NO_SYMLINKS: open(2) would follow links, which that caller relies on not.
  if (fd < 0 && errno == ENOSYS && (resolve & RESOLVE_NO_SYMLINKS) == 0) {
    fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  }
  return fd;
}

std::string resolved_path(int fd, const std::string& fallback) {
  char buffer[4096];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = ::readlink(link.c_str(), buffer, sizeof buffer - 1);
  if (n <= 0) return fallback;
  return std::string(buffer, static_cast<std::size_t>(n));
}

// Where a path whose last component is a symbolic link leads, without /proc: the link's text
// (readlink of the path), joined to the path's directory, when that joined path opens through
// no link at all (RESOLVE_NO_SYMLINKS) onto the very inode the path's descriptor holds
// (`opened`, its fstat: st_dev and st_ino). On Debian 12 /lib, /lib64, /bin and /sbin are
// such links (usr/lib, ...): each cost a readlink of /proc/self/fd/N, about 17 us in a fresh
// process on the build machine (/proc makes the process's fd directory for it), against two
// or three short calls here. Anything else (a link in a directory above, a target with "." or
// "..", a link to a link, another inode: a link changed meanwhile) returns "" and the caller
// asks /proc as before.
std::string resolved_through_last_link(const struct stat& opened, const std::string& path) {
  if (!is_plain_absolute_path(path) || path == "/") return "";
  char target[4096];
  const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
  if (n <= 0) return "";
  std::string text(target, static_cast<std::size_t>(n));
  std::string joined;
  if (text.front() == '/') {
    joined = std::move(text);
  } else {
    const std::string dir = path.substr(0, path.rfind('/'));
    joined = dir + "/" + text;
  }
  if (!is_plain_absolute_path(joined)) return "";
  UniqueFd direct(open_path(joined, RESOLVE_NO_SYMLINKS));
  struct stat st {};
  if (!direct.valid() || ::fstat(direct.get(), &st) != 0 || st.st_dev != opened.st_dev ||
      st.st_ino != opened.st_ino) {
    return "";
  }
  return joined;
}

}  // namespace

bool is_plain_absolute_path(std::string_view path) {
  if (path.empty() || path.front() != '/') return false;
  if (path == "/") return true;
  if (path.back() == '/') return false;
  std::size_t start = 1;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

PathKind OpenedPaths::kind(const std::string& path) const {
  auto it = entries_.find(path);
  if (it != entries_.end()) return it->second.kind;
  Entry entry;
  // Issue 11: a plain absolute path that opens through no symbolic link at all is its own
  // canonical form, so the readlink of /proc/self/fd/N (about 6 us each on the build machine,
  // a tenth of the launch's own work for the 16 paths of a small policy) is only paid for a
  // path that goes through a link (/lib -> usr/lib) or is not plain. RESOLVE_NO_SYMLINKS
  // refuses magic links too, so nothing is followed here that the second open would not.
  bool through_no_link = false;
  if (is_plain_absolute_path(path)) {
    entry.fd.reset(open_path(path, RESOLVE_NO_SYMLINKS));
    through_no_link = entry.fd.valid();
  }
  if (!entry.fd.valid()) entry.fd.reset(open_path(path, RESOLVE_NO_MAGICLINKS));
  struct stat st {};
  if (entry.fd.valid() && ::fstat(entry.fd.get(), &st) == 0) {
    entry.kind = S_ISDIR(st.st_mode) ? PathKind::Directory : PathKind::File;
    if (through_no_link) {
      entry.canonical = path;
    } else if (std::string joined = resolved_through_last_link(st, path); !joined.empty()) {
      entry.canonical = std::move(joined);
    } else {
      entry.canonical = resolved_path(entry.fd.get(), path);
    }
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

void OpenedPaths::open_writable(const std::vector<std::string>& paths, uid_t module_uid) {
  for (const auto& path : paths) {
    if (entries_.contains(path)) continue;
    auto refuse = [&](const std::string& what) {
      throw Error(ErrorKind::StepFailed, "step directories failed: " + what);
    };
    auto judge = [&](int fd, const std::string& component, bool last) {
      struct stat st {};
      if (::fstat(fd, &st) != 0) refuse("fstat " + component + ": " + errno_text(errno));
      if (auto problem =
              writable_path_problem(component, PathOwnership{st.st_uid, st.st_mode, st.st_nlink},
                                    last, path, module_uid)) {
        refuse(*problem);
      }
      return st;
    };
    // Policy paths are absolute and normalized (no "..", no "//", no trailing "/", not "/").
    UniqueFd at(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!at.valid()) refuse("open /: " + errno_text(errno));
    judge(at.get(), "/", false);
    Entry entry;
    std::size_t start = 1;
    while (start <= path.size()) {
      std::size_t end = path.find('/', start);
      if (end == std::string::npos) end = path.size();
      const std::string name = path.substr(start, end - start);
      const std::string component = path.substr(0, end);
      const bool last = end == path.size();
      start = end + 1;
      UniqueFd next(open_no_symlinks(at.get(), name, O_PATH));
      if (!next.valid()) {
        if (errno == ENOENT) break;  // missing: the entry stays Missing
        if (errno == ELOOP) refuse(writable_path_symlink_problem(component, path));
        refuse("open " + component + ": " + errno_text(errno));
      }
      const struct stat st = judge(next.get(), component, last);
      if (last) {
        entry.kind = S_ISDIR(st.st_mode) ? PathKind::Directory : PathKind::File;
        // Every component was opened through no symbolic link: the path is its own
        // canonical form when it is plain (policy paths are, src/policy/paths.cpp).
        entry.canonical = is_plain_absolute_path(path) ? path : resolved_path(next.get(), path);
        entry.fd = std::move(next);
        break;
      }
      at = std::move(next);
    }
    entries_.emplace(path, std::move(entry));
  }
}

void OpenedPaths::open_system_directories(const std::vector<std::string>& paths) {
  const auto open_directory = [](const std::string& path) {
    open_how how{};
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS;
    return static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how));
  };
  for (const auto& path : paths) {
    if (entries_.contains(path) || !is_plain_absolute_path(path) || path == "/") continue;
    Entry entry;
    const int fd = open_directory(path);
    const int error = errno;
    entry.fd.reset(fd);
    if (entry.fd.valid()) {
      entry.kind = PathKind::Directory;
      entry.canonical = path;
      entries_.emplace(path, std::move(entry));
      continue;
    }
    // ENOENT through no link at all (a link on the way would have been ELOOP first): missing.
    if (error == ENOENT) {
      entries_.emplace(path, std::move(entry));
      continue;
    }
    if (error != ELOOP) continue;
    // EINVAL: the link is a directory above, not the last component.
    char target[4096];
    const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    std::string joined(target, static_cast<std::size_t>(n));
    if (joined.front() != '/') joined = path.substr(0, path.rfind('/')) + "/" + joined;
    if (joined == "/" || !is_plain_absolute_path(joined)) continue;
    entry.fd.reset(open_directory(joined));
    if (!entry.fd.valid()) continue;
    entry.kind = PathKind::Directory;
    entry.canonical = std::move(joined);
    entries_.emplace(path, std::move(entry));
  }
}

int OpenedPaths::fd(const std::string& path) const {
  auto it = entries_.find(path);
  return it == entries_.end() ? -1 : it->second.fd.get();
}

}  // namespace oarbank
