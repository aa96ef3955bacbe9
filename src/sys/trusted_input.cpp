#include "sys/trusted_input.hpp"

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "sys/error.hpp"

namespace oarbank {
namespace {

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// What is wrong with one entry (the file, or a directory above it) owned as `st` says.
std::optional<std::string> entry_problem(const std::string& what, const struct stat& st,
                                         uid_t caller) {
  if (st.st_uid != 0 && st.st_uid != caller) {
    return what + " belongs to uid " + std::to_string(st.st_uid) +
           ", neither root nor the caller: that user could change what this launch enforces";
  }
  const bool directory = S_ISDIR(st.st_mode);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !(directory && (st.st_mode & S_ISVTX) != 0)) {
    return what + " is writable by " + ((st.st_mode & S_IWOTH) != 0 ? "others" : "its group") +
           " (mode " + octal_mode(st.st_mode) + (directory ? ", not sticky" : "") +
           "): another user could change what this launch enforces (chmod go-w)";
  }
  return std::nullopt;
}

// The directories above `path` (absolute), nearest first, "/" last.
std::vector<std::string> directories_above(std::string path) {
  std::vector<std::string> out;
  while (path.size() > 1) {
    const auto slash = path.rfind('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
    out.push_back(path);
  }
  return out;
}

}  // namespace

std::optional<std::string> untrusted_input_problem(const std::string& path, int fd,
                                                   const struct stat& st) {
  const uid_t caller = ::getuid();
  if (auto problem = entry_problem(path, st, caller)) return problem;
  // Two chains of directories, each judged whole: the one the path names as given (a link in
  // a directory another user may write is theirs to point anywhere: session 14's review of
  // this very check), and the one the opened file really lies in, read from the descriptor
  // (not the name again: what was opened is what is read). A link whose own directory is
  // neither (a link to a link) is judged by where it leads alone.
  std::string given = path;
  if (given.empty() || given[0] != '/') {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd) == nullptr) {
      return "cannot judge who may change " + path + ": getcwd: " + errno_text(errno);
    }
    given = std::string(cwd) + "/" + given;
  }
  char real[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), real, sizeof real - 1);
  if (n <= 0 || real[0] != '/') {
    return "cannot judge who may change " + path + ": readlink " + link + ": " +
           (n < 0 ? errno_text(errno) : std::string("not a path"));
  }
  real[n] = '\0';
  std::vector<std::string> chain = directories_above(given);
  if (given != real) {  // through no link (the usual case): one chain, judged once
    for (auto& dir : directories_above(real)) chain.push_back(std::move(dir));
  }
  for (const auto& dir : chain) {
    struct stat above {};
    if (::stat(dir.c_str(), &above) != 0) {
      return "cannot judge who may change " + path + ": stat " + dir + ": " + errno_text(errno);
    }
    if (auto problem = entry_problem(dir + ", a directory above " + path + ",", above, caller)) {
      return problem;
    }
  }
  return std::nullopt;
}

}  // namespace oarbank
