#include "probe/writable_path_rule.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sys/shell_word.hpp"

namespace oarbank {
namespace {

std::string where(const std::string& component, const std::string& writable_path) {
  return component == writable_path
             ? component
             : fmt::format("{} (above the writable directory {})", component, writable_path);
}

std::string rule(bool is_writable_path, uid_t module_uid) {
  return is_writable_path ? fmt::format(
                                "a writable directory must belong to root or the module user ({}) "
                                "and not be writable by group or others",
                                module_uid)
                          : fmt::format(
                                "every directory above a writable one must belong to root or the "
                                "module user ({}) and not be writable by group or others, unless "
                                "sticky (as /tmp)",
                                module_uid);
}

}  // namespace

std::optional<std::string> writable_path_problem(const std::string& component,
                                                 const PathOwnership& owner, bool is_writable_path,
                                                 const std::string& writable_path,
                                                 uid_t module_uid) {
  const auto mode = static_cast<unsigned>(owner.mode & 07777);
  if (!is_writable_path && !S_ISDIR(owner.mode)) {
    return fmt::format("{} is not a directory", where(component, writable_path));
  }
  if (is_writable_path && !S_ISDIR(owner.mode) && !S_ISREG(owner.mode)) {
    return fmt::format("{} is neither a directory nor a regular file", component);
  }
  // A second name for a writable file: where fs.protected_hardlinks is off, another user can
  // link a file of the operator's (or root's) at the path a policy names, and the module would
  // write through it.
  if (is_writable_path && S_ISREG(owner.mode) && owner.links > 1) {
    return fmt::format(
        "{} has {} names (hard links; owner uid {}, mode {:04o}); a writable file "
        "must have one name",
        component, owner.links, owner.uid, mode);
  }
  if (owner.uid != 0 && owner.uid != module_uid) {
    return fmt::format("{} is owned by uid {} (mode {:04o}); {}", where(component, writable_path),
                       owner.uid, mode, rule(is_writable_path, module_uid));
  }
  const bool others_write = (owner.mode & (S_IWGRP | S_IWOTH)) != 0;
  const bool sticky = (owner.mode & S_ISVTX) != 0;
  if (others_write && (is_writable_path || !sticky)) {
    return fmt::format("{} is writable by group or others{} (owner uid {}, mode {:04o}); {}",
                       where(component, writable_path), is_writable_path ? "" : " and not sticky",
                       owner.uid, mode, rule(is_writable_path, module_uid));
  }
  return std::nullopt;
}

std::string writable_path_symlink_problem(const std::string& component,
                                          const std::string& writable_path) {
  return fmt::format(
      "{} is a symbolic link; writable directories are opened without following "
      "links",
      where(component, writable_path));
}

int writable_access_mode(const std::string& role, bool is_directory) {
  const int write = role == "data" ? 0 : W_OK;
  return R_OK | write | (is_directory ? X_OK : 0);
}

std::string writable_access_problem(const std::string& role, const std::string& path,
                                    const PathOwnership& owner, uid_t module_uid, int err) {
  const bool is_directory = S_ISDIR(owner.mode);
  const int needed = writable_access_mode(role, is_directory);
  const bool write = (needed & W_OK) != 0;
  const char* access = is_directory ? (write ? "read, write and search" : "read and search")
                                    : (write ? "read and write" : "read");
  // The permission letters chmod(1) takes for that access ("rwx", "rx", "rw", "r").
  std::string letters = "r";
  if (write) letters += "w";
  if (is_directory) letters += "x";
  const auto mode = static_cast<unsigned>(owner.mode & 07777);
  const char* name = ::strerrorname_np(err);  // glibc 2.32; nullptr for an unknown number
  std::string line = fmt::format(
      "the module user (uid {}) needs {} access to the {} {} {}, owned by uid {} with mode {:04o} "
      "({})",
      module_uid, access, role, is_directory ? "directory" : "file", path, owner.uid, mode,
      name != nullptr ? name : fmt::format("errno {}", err));
  if (err != EACCES) return line;
  // The owner's permission bits the access needs, and whether the mode has them all.
  mode_t user_bits = S_IRUSR;
  if (write) user_bits |= S_IWUSR;
  if (is_directory) user_bits |= S_IXUSR;
  const bool owner_has_them = (owner.mode & user_bits) == user_bits;
  // Session 21's attack review: the path is the policy's (the module author's), and the fix is
  // pasted into a root shell: quoted; and another's directory (root's /var/lib/dpkg, named as
  // work) is not simply to be given away: the first fix is a directory of the module's own.
  const std::string word = shell_word(path);
  std::string fix;
  if (owner.uid == module_uid) {
    fix = fmt::format("chmod u+{} {}", letters, word);
  } else {
    std::string give = fmt::format("chown {} {}", module_uid, word);
    if (!owner_has_them) give += fmt::format(" and chmod u+{} {}", letters, word);
    if (write) {
      // A writable path may not be writable by group or others (the directory rule above),
      // so only a change of owner gives it.
      fix = fmt::format(
          "name a {} directory of the module's own (one that does not exist yet, below the "
          "node's writable_roots, is made for its user), or, if this one is meant for this "
          "module alone, {}",
          role, give);
    } else {
      // Read-only input may stay another's (root's) if every user may read it.
      fix = fmt::format(
          "if it is meant for this module alone, {}; if every user may read it, "
          "chmod o+{} {}",
          give, letters, word);
    }
  }
  return line + "; to fix: " + fix;
}

}  // namespace oarbank
