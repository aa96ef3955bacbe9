#include "sys/trusted_input.hpp"

#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <vector>

#include "sys/error.hpp"
#include "sys/safe_open.hpp"

namespace oarbank {
namespace {

// How many symbolic links one path may pass through (the kernel's MAXSYMLINKS).
constexpr int kMaxLinks = 40;

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

std::optional<std::string> owner_problem(const std::string& what, const struct stat& st,
                                         uid_t caller) {
  if (st.st_uid == 0 || st.st_uid == caller) return std::nullopt;
  return what + " belongs to uid " + std::to_string(st.st_uid) +
         ", neither root nor the caller: that user could change what this launch enforces";
}

// The file, or a directory it is reached through: its owner, and who may write it.
std::optional<std::string> entry_problem(const std::string& what, const struct stat& st,
                                         uid_t caller) {
  if (auto problem = owner_problem(what, st, caller)) return problem;
  const bool directory = S_ISDIR(st.st_mode);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !(directory && (st.st_mode & S_ISVTX) != 0)) {
    return what + " is writable by " + ((st.st_mode & S_IWOTH) != 0 ? "others" : "its group") +
           " (mode " + octal_mode(st.st_mode) + (directory ? ", not sticky" : "") +
           "): another user could change what this launch enforces (chmod go-w)";
  }
  return std::nullopt;
}

// Walks `path` (absolute) as the kernel resolves it, one component at a time with lstat:
// every directory passed through and every link followed is judged, and a link's target is
// walked the same way (from the link's own directory when relative). On success `last` is the
// lstat of what the path names.
std::optional<std::string> walk(const std::string& path, const std::string& named, uid_t caller,
                                int& links, struct stat& last) {
  const auto cannot = [&](const std::string& what) {
    return "cannot judge who may change " + named + ": " + what + ": " + errno_text(errno);
  };
  std::string at = "/";
  if (::lstat("/", &last) != 0) return cannot("lstat /");
  if (auto problem = entry_problem("/, a directory above " + named + ",", last, caller)) {
    return problem;
  }
  const std::vector<std::string> parts = path_components(path);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    if (part == ".") continue;
    if (part == "..") {
      at = at == "/" ? "/" : at.substr(0, std::max<std::size_t>(at.rfind('/'), 1));
      continue;
    }
    const std::string next = at == "/" ? "/" + part : at + "/" + part;
    if (::lstat(next.c_str(), &last) != 0) return cannot("lstat " + next);
    if (S_ISLNK(last.st_mode)) {
      // A link is its owner's to point anywhere, and its directory's writers' to replace
      // (judged above, as `at`).
      if (auto problem =
              owner_problem(next + ", a link on the way to " + named + ",", last, caller)) {
        return problem;
      }
      if (++links > kMaxLinks) {
        errno = ELOOP;
        return cannot("follow " + next);
      }
      char target[PATH_MAX];
      const ssize_t n = ::readlink(next.c_str(), target, sizeof target - 1);
      if (n <= 0) return cannot("readlink " + next);
      target[n] = '\0';
      std::string rest = target[0] == '/' ? std::string(target) : at + "/" + target;
      for (std::size_t j = i + 1; j < parts.size(); ++j) rest += "/" + parts[j];
      return walk(rest, named, caller, links, last);
    }
    const bool final = i + 1 == parts.size();
    if (!final) {
      if (auto problem = entry_problem(next + ", a directory above " + named + ",", last, caller)) {
        return problem;
      }
    }
    at = next;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> untrusted_input_problem(const std::string& path, int fd,
                                                   const struct stat& st) {
  const uid_t caller = ::getuid();
  if (auto problem = entry_problem(path, st, caller)) return problem;
  std::string absolute = path;
  if (absolute.empty() || absolute[0] != '/') {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd) == nullptr) {
      return "cannot judge who may change " + path + ": getcwd: " + errno_text(errno);
    }
    absolute = std::string(cwd) + "/" + absolute;
  }
  int links = 0;
  struct stat last {};
  if (auto problem = walk(absolute, path, caller, links, last)) return problem;
  // What the walk judged is what was opened and is read (not a file put in its place since).
  struct stat opened {};
  if (::fstat(fd, &opened) != 0 || opened.st_dev != last.st_dev || opened.st_ino != last.st_ino) {
    return path + " changed while it was judged: read it again";
  }
  return std::nullopt;
}

}  // namespace oarbank
