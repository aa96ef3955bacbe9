#include "supervise/writable_dirs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "plan/launch_steps.hpp"
#include "probe/path_facts.hpp"
#include "probe/writable_path_rule.hpp"
#include "sys/error.hpp"
#include "sys/safe_open.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {
namespace {

[[noreturn]] void directory_failure(const std::string& what, int err) {
  throw step_error(LaunchStep::Directories, what, err);
}

}  // namespace

std::optional<std::string> writable_root_for(const std::string& dir,
                                             const std::vector<std::string>& roots) {
  // Paths here are normalized (no "..", no "//", no trailing "/"): a prefix ending at a "/"
  // is a real ancestor.
  for (const auto& root : roots) {
    if (dir.size() > root.size() + 1 && dir.starts_with(root) && dir[root.size()] == '/') {
      return root;
    }
  }
  return std::nullopt;
}

std::vector<std::string> make_writable_dirs(const std::vector<std::string>& dirs,
                                            const std::vector<std::string>& roots, uid_t uid,
                                            gid_t gid, bool chown) {
  std::vector<std::string> created;
  try {
    for (const auto& dir : dirs) {
      struct stat st {};
      if (::lstat(dir.c_str(), &st) == 0) continue;  // exists: the launcher checks it is usable
      std::string root_list;
      for (const auto& root : roots) root_list += (root_list.empty() ? "" : ", ") + root;
      if (!writable_root_for(dir, roots)) {
        throw step_error(LaunchStep::Directories,
                         dir +
                             " does not exist, and sandbox-run creates missing directories only "
                             "below the node's writable_roots (" +
                             root_list + ")",
                         0, ErrorKind::Unenforceable);
      }
      // Walk from "/" one component at a time, never through a symbolic link (openat2
      // RESOLVE_NO_SYMLINKS): a parent in a world-writable place (/tmp) cannot redirect where
      // the directory is made. Every component that already exists is judged by the rule the
      // launcher applies (probe/writable_path_rule.hpp) before anything is made inside it, so
      // nothing is made in another user's directory.
      auto judge = [&](int fd, const std::string& component, bool last) {
        struct stat existing {};
        if (::fstat(fd, &existing) != 0) directory_failure("fstat " + component, errno);
        if (auto problem = writable_path_problem(
                component, PathOwnership{existing.st_uid, existing.st_mode, existing.st_nlink},
                last, dir, uid)) {
          throw step_error(LaunchStep::Directories, *problem);
        }
      };
      UniqueFd at(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!at.valid()) directory_failure("open /", errno);
      judge(at.get(), "/", false);
      const auto names = path_components(dir);
      std::string sofar;
      for (std::size_t i = 0; i < names.size(); ++i) {
        const std::string& name = names[i];
        sofar += "/" + name;
        const bool last = i + 1 == names.size();
        bool made = false;
        UniqueFd next(open_no_symlinks(at.get(), name, O_PATH | O_DIRECTORY));
        if (!next.valid() && errno == ENOENT) {
          if (::mkdirat(at.get(), name.c_str(), last ? 0700 : 0755) == 0) {
            created.push_back(sofar);
            made = true;
          } else if (errno != EEXIST) {
            directory_failure("mkdir " + sofar, errno);
          }
          next.reset(
              open_no_symlinks(at.get(), name, (made && last ? O_RDONLY : O_PATH) | O_DIRECTORY));
        }
        if (!next.valid()) {
          if (errno == ELOOP) {
            throw step_error(LaunchStep::Directories, writable_path_symlink_problem(sofar, dir));
          }
          directory_failure("open " + sofar + (errno == ENOTDIR ? " (not a directory)" : ""),
                            errno);
        }
        if (!made) judge(next.get(), sofar, last);
        if (made && last && chown) {
          // Through the descriptor, after checking it is the directory just made (ours, empty
          // of owners but us): the owner of the parent cannot swap another one in by name.
          struct stat made_st {};
          if (::fstat(next.get(), &made_st) != 0 || made_st.st_uid != ::geteuid()) {
            directory_failure("chown " + sofar + " (not the directory just made)", EPERM);
          }
          if (::fchown(next.get(), uid, gid) != 0) directory_failure("chown " + sofar, errno);
        }
        at = std::move(next);
      }
    }
  } catch (...) {
    remove_created_dirs(created);  // nothing is left of a refused run
    throw;
  }
  return created;
}

void remove_created_dirs(const std::vector<std::string>& created) {
  for (auto it = created.rbegin(); it != created.rend(); ++it) ::rmdir(it->c_str());
}

std::vector<std::string> own_dirs_open_to_others(const std::vector<std::string>& dirs, uid_t uid,
                                                 gid_t gid) {
  std::vector<std::string> open;
  for (const auto& dir : dirs) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid) continue;
    const mode_t others = st.st_mode & (st.st_gid == gid ? 0005 : 0055);
    if (others == 0) continue;
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    open.push_back(dir + " (mode " + mode + ")");
  }
  return open;
}

std::string writable_dir_problem(const std::string& path, uid_t uid) {
  if (path.empty() || path[0] != '/') return "";
  try {
    OpenedPaths().open_writable({path}, uid);  // the launcher's own walk and judgement
  } catch (const Error& e) {
    const std::string prefix = step_failed_message(LaunchStep::Directories, "");
    std::string_view what = e.what();
    if (what.starts_with(prefix)) what.remove_prefix(prefix.size());
    return std::string(what);
  }
  return "";
}

namespace {

// Whether the permission bits of `st` give the user `uid` (group `gid`, no supplementary
// groups) all of `user_bits` (S_I?USR), in the owner's, the group's or the others' class.
bool permits(const struct stat& st, uid_t uid, gid_t gid, mode_t user_bits) {
  const mode_t needed = st.st_uid == uid   ? user_bits
                        : st.st_gid == gid ? user_bits >> 3
                                           : user_bits >> 6;
  return (st.st_mode & needed) == needed;
}

}  // namespace

std::string write_permission_problem(const std::string& path, uid_t uid, gid_t gid) {
  struct stat st {};
  if (path.empty() || path[0] != '/' || ::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return "";
  }
  if (permits(st, uid, gid, S_IWUSR | S_IXUSR)) return "";
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return path + " is owned by uid " + std::to_string(st.st_uid) + " with mode " + mode +
         ": the module user (uid " + std::to_string(uid) +
         ") may not make files in it by its permission bits, whatever the policy grants; give "
         "the module a directory of its own (a data path that does not exist yet, below the "
         "node's writable_roots, is made for its user)";
}

namespace {

// Whether the module's user (no supplementary groups) may list and search a directory, by its
// permission bits: the walk below goes only where the module itself could have looked.
bool listable_by(const struct stat& st, uid_t uid, gid_t gid) {
  return permits(st, uid, gid, S_IRUSR | S_IXUSR);
}

}  // namespace

std::optional<std::string> executable_written_since(const std::vector<std::string>& dirs,
                                                    const timespec& since, uid_t uid, gid_t gid,
                                                    const std::vector<HeldDirectory>& held,
                                                    std::size_t budget) {
  struct Pending {
    int fd;
    std::string path;
    int depth;
  };
  const auto newer = [&since](const timespec& t) {
    return t.tv_sec > since.tv_sec || (t.tv_sec == since.tv_sec && t.tv_nsec >= since.tv_nsec);
  };
  std::optional<std::string> found;
  std::vector<HeldDirectory> roots;
  roots.reserve(dirs.size() + held.size());
  for (const auto& dir : dirs) roots.push_back({dir, -1});
  for (const auto& dir : held) roots.push_back(dir);
  for (const auto& [dir, held_fd] : roots) {
    const int root = held_fd >= 0
                         ? ::openat(held_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                         : ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat root_st {};
    if (root < 0) continue;
    if (::fstat(root, &root_st) != 0 || !listable_by(root_st, uid, gid)) {
      ::close(root);
      continue;
    }
    std::vector<Pending> pending{{root, dir, 0}};
    while (!pending.empty()) {
      Pending at = std::move(pending.back());
      pending.pop_back();
      DIR* listing = found || budget == 0 ? nullptr : ::fdopendir(at.fd);
      if (listing == nullptr) {
        ::close(at.fd);
        continue;
      }
      while (const dirent* entry = ::readdir(listing)) {
        const std::string_view name = entry->d_name;
        if (name == "." || name == "..") continue;
        if (budget == 0 || found) break;
        --budget;
        struct stat st {};
        if (::fstatat(::dirfd(listing), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        const std::string path = at.path + "/" + entry->d_name;
        // The change time, which the kernel sets and utimensat cannot move ahead (a module's
        // `touch -d 2100` would have named its file on every later run; session 19's review).
        // Only the module's own files (session 20's review: a data directory that is the
        // parent of other modules' 0700 directories had the supervisor, as root, name another
        // module's file in this module's line).
        if (S_ISREG(st.st_mode) && st.st_uid == uid && (st.st_mode & 0111) != 0 &&
            newer(st.st_ctim)) {
          found = path;
          break;
        }
        // At most 64 directories open and waiting (the supervisor's own descriptors).
        if (S_ISDIR(st.st_mode) && st.st_dev == root_st.st_dev && at.depth < 16 &&
            pending.size() < 64 && listable_by(st, uid, gid)) {
          const int child = ::openat(::dirfd(listing), entry->d_name,
                                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (child >= 0) pending.push_back({child, path, at.depth + 1});
        }
      }
      ::closedir(listing);
    }
    if (found) break;
  }
  return found;
}

}  // namespace oarbank
