// docs/sandbox-run.md, "What a run does, in order" (Directories): sandbox-run makes a policy's
// work, temp and data directories, when they do not exist yet, owned by the module user (mode
// 0700), so the module, which never runs as root, can use them.
#pragma once

#include <sys/types.h>
#include <time.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace oarbank {

// Creates each missing directory (and missing parents, 0755) without following a symbolic
// link at any component, only when it lies strictly below one of `roots` (the node's
// writable_roots); elsewhere a missing directory throws Error(Unenforceable), named. Every
// component that exists on the way must pass probe/writable_path_rule.hpp for the module user
// `uid` (else Error(StepFailed), named, before anything is made). The last component is
// chowned to uid:gid when `chown`. Returns the directories created, outermost first. Throws
// Error(StepFailed) when a step fails. Directories that exist already are left to the
// launcher's own check (OpenedPaths::open_writable).
std::vector<std::string> make_writable_dirs(const std::vector<std::string>& dirs,
                                            const std::vector<std::string>& roots, uid_t uid,
                                            gid_t gid, bool chown);

// The root of `roots` that `dir` lies strictly below, where make_writable_dirs would make it
// (sandbox-check says "will be created" by the same answer); nothing when none. Pure.
std::optional<std::string> writable_root_for(const std::string& dir,
                                             const std::vector<std::string>& roots);

// Session 20's real-programs review: why `path` could not be given to the module user `uid` as
// a writable directory today: the launcher's own walk and rule (OpenedPaths::open_writable,
// probe/writable_path_rule.hpp) over each component that exists; "" when none breaks it. So that a
// denial's advice does not propose what the next run would refuse.
std::string writable_dir_problem(const std::string& path, uid_t uid);
// Session 21's real-programs review: a write refused by Landlock (it is asked before the
// permission bits when a file is made) proposed "data" for root's 0755 directory, and the next
// trial failed there by those bits, unrecorded. Why the module user `uid` (group `gid`, no
// supplementary groups) could not make files in the existing directory `path` by its
// permission bits; "" when it could, or when `path` is not there (the run makes it its own).
std::string write_permission_problem(const std::string& path, uid_t uid, gid_t gid);

// Removes what make_writable_dirs created (innermost first; only while empty).
void remove_created_dirs(const std::vector<std::string>& created);

// Issue 12's review: under a uid of the module's own, the existing directories among `dirs`
// that belong to it (uid) and that other users may read or search: a group other than its
// own (gid) with r or x, or others with r or x. Each is accepted (the module may chmod its
// own directory as it likes anyway; docs/sandbox-run.md, "What a module sees") and named:
// one line each, "DIR (mode 0755)". Its new directories are 0700 (umask 077).
std::vector<std::string> own_dirs_open_to_others(const std::vector<std::string>& dirs, uid_t uid,
                                                 gid_t gid);

// Session 19's real-programs review: a file the module wrote and then ran or loaded fails on
// the noexec writable mounts with no refusal recorded (cargo's build scripts, proc-macros and
// tests, ctest). The first regular file with an execute bit changed (ctime) at or after `since`
// below `dirs`, as its path; nothing when there is none. Walked as the supervisor (root) after the
// module ended: never through a symbolic link, never into another mount, at most `budget`
// entries in all and 16 levels deep, so a module's huge or deep tree costs a bounded time.
// Only files of the module's user `uid`, and only into directories that user (group `gid`, no
// other) may list and search: the supervisor, root, names nothing the module could not see
// (session 20's review).
// A directory the walk starts from by a descriptor it holds (the module's own /tmp, whose
// mount namespace is gone when the module has ended), named `name` in what it finds.
struct HeldDirectory {
  std::string name;
  int fd = -1;
};
std::optional<std::string> executable_written_since(const std::vector<std::string>& dirs,
                                                    const timespec& since, uid_t uid, gid_t gid,
                                                    const std::vector<HeldDirectory>& held = {},
                                                    std::size_t budget = 4096);

}  // namespace oarbank
