// The real PathOracle: opens each path once with O_PATH, answers from fstat of that
// descriptor, and keeps it for the Landlock rule, so the rule covers the very inode the plan
// was made from (no window between looking and using). Symbolic links are followed, but not
// /proc's magic links (openat2 RESOLVE_NO_MAGICLINKS, Linux 5.6): a policy naming
// /proc/<pid>/cwd would reach another process's directory without naming it. The policy's
// writable paths are opened by open_writable() instead, through no symbolic link at all.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "probe/path_oracle.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {

// "/" or "/a/b": absolute, with no empty, "." or ".." component and no trailing "/". Such a
// path, opened through no symbolic link, names where it leads: its own canonical form.
[[nodiscard]] bool is_plain_absolute_path(std::string_view path);

class OpenedPaths : public PathOracle {
 public:
  [[nodiscard]] PathKind kind(const std::string& path) const override;
  [[nodiscard]] std::string canonical(const std::string& path) const override;
  // The O_PATH descriptor of a path kind() found; -1 if it was missing.
  [[nodiscard]] int fd(const std::string& path) const;

  // Issue 10: the policy's writable paths (work, data, temp) for a module running as
  // `module_uid`. Each is opened one component at a time from "/", through no symbolic link
  // (openat2 RESOLVE_NO_SYMLINKS), and every component is judged by
  // probe/writable_path_rule.hpp on the very descriptor the walk goes on from; the last one is
  // what kind() and fd() answer with afterwards, so Landlock's rule lands on the inode that was
  // checked. A missing path is recorded missing (the plan names it). Call before kind().
  // Throws Error(StepFailed), "step directories failed: ...", naming the path.
  void open_writable(const std::vector<std::string>& paths, uid_t module_uid);

  // Issue 11: the base system's directories (plan.hpp, base_read_execute_paths), opened before
  // the plan asks of them in fewer calls than kind() makes: O_DIRECTORY says what each is (no
  // fstat), and a top-level link of a merged /usr (/lib -> usr/lib) is followed by its text,
  // the target opened through no link at all: 3 calls where kind() makes 7. These names are
  // the launcher's own, on the root file system, so no /proc magic link is among them (a
  // policy's path goes through kind(), which refuses magic links). Anything else (a file, a
  // link to a link or below one, a target with "." or "..", openat2 missing) is left to kind().
  void open_system_directories(const std::vector<std::string>& paths);

 private:
  struct Entry {
    UniqueFd fd;
    PathKind kind = PathKind::Missing;
    std::string canonical;
  };
  mutable std::map<std::string, Entry> entries_;
};

}  // namespace oarbank
