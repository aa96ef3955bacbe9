#include "sys/trusted_input.hpp"

#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

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

}  // namespace

std::optional<std::string> untrusted_input_problem(const std::string& path, const struct stat& st) {
  const uid_t caller = ::getuid();
  if (auto problem = entry_problem(path, st, caller)) return problem;
  // The directories above the file as the kernel reached it: a link's own directory can be
  // trusted while the one its target lies in is not.
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) return std::nullopt;  // opened already: gone since, nothing to judge
  std::string dir = real;
  std::free(real);
  while (dir != "/") {
    const auto slash = dir.rfind('/');
    dir = slash == 0 ? "/" : dir.substr(0, slash);
    struct stat above {};
    if (::stat(dir.c_str(), &above) != 0) continue;
    if (auto problem = entry_problem(dir + ", a directory above " + path + ",", above, caller)) {
      return problem;
    }
  }
  return std::nullopt;
}

}  // namespace oarbank
