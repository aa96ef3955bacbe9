#include "probe/writable_path_rule.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

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
    return fmt::format("{} has {} names (hard links; owner uid {}, mode {:04o}); a writable file "
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

}  // namespace oarbank
