// The real PathOracle: opens each path once with O_PATH, answers from fstat of that
// descriptor, and keeps it for the Landlock rule, so the rule covers the very inode the plan
// was made from (no window between looking and using). Symbolic links are followed, but not
// /proc's magic links (openat2 RESOLVE_NO_MAGICLINKS, Linux 5.6): a policy naming
// /proc/<pid>/cwd would reach another process's directory without naming it.
#pragma once

#include <map>
#include <string>

#include "plan/plan.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {

class OpenedPaths : public PathOracle {
 public:
  [[nodiscard]] PathKind kind(const std::string& path) const override;
  [[nodiscard]] std::string canonical(const std::string& path) const override;
  // The O_PATH descriptor of a path kind() found; -1 if it was missing.
  [[nodiscard]] int fd(const std::string& path) const;

 private:
  struct Entry {
    UniqueFd fd;
    PathKind kind = PathKind::Missing;
    std::string canonical;
  };
  mutable std::map<std::string, Entry> entries_;
};

}  // namespace oarbank
