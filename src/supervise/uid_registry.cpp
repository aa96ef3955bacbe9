#include "supervise/uid_registry.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

#include "supervise/run_state.hpp"
#include "sys/error.hpp"
#include "sys/shell_word.hpp"
#include "sys/text_file.hpp"
#include "sys/trusted_input.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {
namespace {

constexpr const char* kLeaseSuffix = ".lease";
constexpr const char* kUidSuffix = ".uid";
constexpr const char* kPasswdSuffix = ".passwd";
constexpr const char* kGroupSuffix = ".group";
constexpr const char* kLock = "lock";
// last_run is rewritten at most this often: a run of a known id then writes nothing.
constexpr std::int64_t kLastRunGranularity = 3600;

[[noreturn]] void registry_failure(const std::string& dir, const std::string& what, int err = 0) {
  throw Error(ErrorKind::StepFailed, "the module user registry " + dir + ": " + what +
                                         (err != 0 ? ": " + errno_text(err) : std::string()));
}

// A file's whole text; a missing one is empty (it names and delegates nothing).
std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Whether /etc/nsswitch.conf names a source other than "files" for passwd or group.
bool nss_beyond_files() {
  std::ifstream in("/etc/nsswitch.conf");
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream head(line.substr(0, colon));
    std::string database;
    head >> database;
    if (database != "passwd" && database != "group") continue;
    std::istringstream sources(line.substr(colon + 1));
    for (std::string source; sources >> source;) {
      if (source.front() == '[') continue;  // an action ([NOTFOUND=return]), not a source
      if (source != "files") return true;
    }
  }
  return false;
}

// Whether `getent DATABASE ID` finds an entry: exit 0 found, 2 not found; anything else
// (no getent, a failing NSS module) throws: a number the database might name is not leased.
bool getent_names(const char* database, std::uint32_t id) {
  const char* program = nullptr;
  for (const char* candidate : {"/usr/bin/getent", "/bin/getent"}) {
    if (::access(candidate, X_OK) == 0) {
      program = candidate;
      break;
    }
  }
  const std::string what = std::string("getent ") + database + " " + std::to_string(id);
  if (program == nullptr) {
    throw Error(ErrorKind::StepFailed,
                "cannot ask the user database (" + what + "): no getent in /usr/bin or /bin");
  }
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  ::posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  const std::string key = std::to_string(id);
  char* const argv[] = {const_cast<char*>(program), const_cast<char*>(database),
                        const_cast<char*>(key.c_str()), nullptr};
  char* const envp[] = {const_cast<char*>("PATH=/usr/bin:/bin"), nullptr};
  pid_t pid = 0;
  const int err = ::posix_spawn(&pid, program, &actions, nullptr, argv, envp);
  ::posix_spawn_file_actions_destroy(&actions);
  if (err != 0) throw Error(ErrorKind::StepFailed, what + ": " + errno_text(err));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      throw Error(ErrorKind::StepFailed, what + ": waitpid: " + errno_text(errno));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2) return false;
  throw Error(ErrorKind::StepFailed,
              "cannot ask the user database: " + what + " ended with status " +
                  std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)));
}

// Every uid and gid that a process running now holds (plan/uid_leases.hpp, proc_status_ids),
// from /proc/PID/status of each process. Read once per new lease, not on every run: reading
// every process's status costs ~30 us each (2.5 ms on 86 processes). Threads are not read
// one by one: a thread with credentials of its own (raw setresuid) is not seen.
std::vector<std::uint32_t> ids_of_running_processes() {
  UniqueFd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* listing = proc.valid() ? ::fdopendir(::dup(proc.get())) : nullptr;
  if (listing == nullptr) {
    throw Error(ErrorKind::StepFailed,
                "cannot list the running processes (/proc), so a uid that one of them holds "
                "could be leased: " +
                    errno_text(errno));
  }
  std::vector<std::uint32_t> ids;
  while (const dirent* entry = ::readdir(listing)) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    const std::string status = std::string(entry->d_name) + "/status";
    UniqueFd fd(::openat(proc.get(), status.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) continue;  // it ended meanwhile
    for (auto id : proc_status_ids(read_fd_text(fd.get()))) ids.push_back(id);
  }
  ::closedir(listing);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// The registry directory, locked (an exclusive flock of its "lock" file) for as long as
// this lives. Files: ID.lease (the lease of ID, JSON) and N.uid (number N reserved, naming
// its id), each root's, 0600, trusted only as such.
class LockedRegistry {
 public:
  LockedRegistry(const std::string& dir, bool create) : dir_(dir) {
    dir_fd_ = open_state_dir(dir, create, nullptr, "the module user registry");
    if (!dir_fd_.valid()) return;  // not there, not made (a listing of nothing)
    lock_.reset(::openat(dir_fd_.get(), kLock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!lock_.valid()) registry_failure(dir, "open lock", errno);
    if (::flock(lock_.get(), LOCK_EX) != 0) registry_failure(dir, "flock lock", errno);
  }

  [[nodiscard]] bool exists() const { return dir_fd_.valid(); }

  // The text of a registry file; nullopt when there is none. Trusted only as this user wrote
  // it: a regular file of its own that nobody else may write (else it throws).
  std::optional<std::string> read(const std::string& name) {
    UniqueFd fd(
        ::openat(dir_fd_.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd.valid()) {
      if (errno == ENOENT) return std::nullopt;
      registry_failure(dir_, "open " + name, errno);
    }
    if (!trusted(fd.get(), name)) {
      registry_failure(dir_, name + " cannot be trusted (not a regular file of uid " +
                                 std::to_string(::geteuid()) + " that only it may write)");
    }
    return read_fd_text(fd.get());
  }

  std::optional<UidLease> lease(const std::string& id) {
    auto text = read(id + kLeaseSuffix);
    if (!text) return std::nullopt;
    std::string problem;
    auto lease = uid_lease_from_json(*text, problem);
    // Never guessed at: a lost lease would hand a module's uid, and its files, to another.
    if (!lease) registry_failure(dir_, id + kLeaseSuffix + " cannot be read: " + problem);
    if (lease->id != id)
      registry_failure(dir_, id + kLeaseSuffix + " names another id (" + lease->id + ")");
    return lease;
  }

  // The id that number `n` is reserved for; nullopt when it is free.
  std::optional<std::string> holder(std::uint32_t n) {
    auto text = read(std::to_string(n) + kUidSuffix);
    if (text && !text->empty() && text->back() == '\n') text->pop_back();
    return text;
  }

  // Reserves `n` for `id` (O_EXCL: a number is reserved once), durably.
  void reserve(std::uint32_t n, const std::string& id) {
    const std::string name = std::to_string(n) + kUidSuffix;
    UniqueFd fd(::openat(dir_fd_.get(), name.c_str(),
                         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    const std::string text = id + "\n";
    if (!fd.valid() ||
        ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
        ::fsync(fd.get()) != 0) {
      registry_failure(dir_, "write " + name, errno);
    }
  }

  // Writes the lease whole to ID.lease.new, fsyncs it, and renames it over ID.lease: a
  // reader sees the old lease or the new one, after a crash too.
  void write(const UidLease& lease) {
    replace_file(lease.id + kLeaseSuffix, uid_lease_to_json(lease), 0600, true);
    ::fsync(dir_fd_.get());  // the new names, durable
  }

  // `lease`'s file of the module's own user database (kPasswdSuffix or kGroupSuffix) holding
  // `text`, cloned as a detached mount. Written (NAME.new, renamed over NAME) when missing, not
  // this user's own regular file of one link that nobody else may write, or not `text` (the
  // home in the passwd file is the run's, which a later run may change).
  UniqueFd user_database_file(const UidLease& lease, const char* suffix, const std::string& text) {
    const std::string name = user_database_name(lease, suffix);
    for (int attempt = 0; attempt < 2; ++attempt) {
      UniqueFd tree(::open_tree(dir_fd_.get(), name.c_str(),
                                OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW));
      if (tree.valid()) {
        if (trusted(tree.get(), name, text.size()) && holds(tree.get(), name, text)) return tree;
      } else if (errno != ENOENT) {
        registry_failure(dir_, "open_tree " + name, errno);
      }
      if (attempt == 0) replace_file(name, text, 0644, false);
    }
    registry_failure(dir_, name + " cannot be trusted even once written again");
  }

  // The lease first, then its number: a crash between them leaves the number reserved (never
  // handed out twice), not a lease without its reservation. Its user database goes with it.
  void remove(const UidLease& lease) {
    if (::unlinkat(dir_fd_.get(), (lease.id + kLeaseSuffix).c_str(), 0) != 0) {
      registry_failure(dir_, "unlink " + lease.id + kLeaseSuffix, errno);
    }
    for (const char* suffix : {kPasswdSuffix, kGroupSuffix}) {
      ::unlinkat(dir_fd_.get(), user_database_name(lease, suffix).c_str(), 0);
    }
    if (holder(lease.uid) == lease.id) {
      ::unlinkat(dir_fd_.get(), (std::to_string(lease.uid) + kUidSuffix).c_str(), 0);
    }
    ::fsync(dir_fd_.get());
  }

  std::vector<UidLease> all() {
    std::vector<UidLease> leases;
    if (!exists()) return leases;
    DIR* listing = ::fdopendir(::dup(dir_fd_.get()));
    if (listing == nullptr) registry_failure(dir_, "opendir", errno);
    std::vector<std::string> ids;
    while (const dirent* entry = ::readdir(listing)) {
      const std::string name = entry->d_name;
      if (name.size() > std::strlen(kLeaseSuffix) && name.ends_with(kLeaseSuffix)) {
        ids.push_back(name.substr(0, name.size() - std::strlen(kLeaseSuffix)));
      }
    }
    ::closedir(listing);
    std::sort(ids.begin(), ids.end());
    for (const auto& id : ids) {
      if (auto lease = this->lease(id)) leases.push_back(std::move(*lease));
    }
    return leases;
  }

 private:
  static std::string user_database_name(const UidLease& lease, const char* suffix) {
    return lease.id + "." + std::to_string(lease.uid) + suffix;
  }

  // Whether the registry's file `name`, open as `fd`, is trusted as this user wrote it: a
  // regular file of its own that nobody else may write, with one name (and `size` bytes, where
  // given).
  bool trusted(int fd, const std::string& name, std::optional<std::size_t> size = {}) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) registry_failure(dir_, "fstat " + name, errno);
    return own_unshared_regular_file(st) &&
           (!size || (st.st_nlink == 1 && st.st_size == static_cast<off_t>(*size)));
  }

  // Whether NAME, the file `tree` is a clone of (the same inode), holds exactly `text`.
  bool holds(int tree, const std::string& name, const std::string& text) {
    UniqueFd fd(::openat(dir_fd_.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    struct stat file {};
    struct stat cloned {};
    if (!fd.valid() || ::fstat(fd.get(), &file) != 0 || ::fstat(tree, &cloned) != 0 ||
        file.st_ino != cloned.st_ino || file.st_dev != cloned.st_dev) {
      return false;
    }
    std::string got(text.size() + 1, '\0');
    const ssize_t n = ::read(fd.get(), got.data(), got.size());
    return n == static_cast<ssize_t>(text.size()) && got.compare(0, text.size(), text) == 0;
  }

  // NAME replaced whole by `text` with `mode`: written to NAME.new (fsync'd where `durable`),
  // then renamed over it, so a reader sees the old file or the new one.
  void replace_file(const std::string& name, const std::string& text, mode_t mode, bool durable) {
    const std::string temp = name + ".new";
    UniqueFd fd(::openat(dir_fd_.get(), temp.c_str(),
                         O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode));
    if (!fd.valid()) registry_failure(dir_, "open " + temp, errno);
    if (::fchmod(fd.get(), mode) != 0 ||
        ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
        (durable && ::fsync(fd.get()) != 0)) {
      registry_failure(dir_, "write " + temp, errno);
    }
    if (::renameat(dir_fd_.get(), temp.c_str(), dir_fd_.get(), name.c_str()) != 0) {
      registry_failure(dir_, "rename " + temp, errno);
    }
  }

  std::string dir_;
  UniqueFd dir_fd_;
  UniqueFd lock_;
};

// nftw's callback has no context argument: the walk's state, for this thread.
thread_local std::uint32_t walk_uid = 0;
thread_local std::string walk_found;

int find_owned(const char* path, const struct stat* st, int, struct FTW*) {
  if (st->st_uid == walk_uid || st->st_gid == walk_uid) {
    walk_found = path;
    return 1;  // stops the walk
  }
  return 0;
}

}  // namespace

std::string user_registry_dir() {
  if (const char* dir = std::getenv(kUserRegistryEnvVar); dir != nullptr && dir[0] == '/') {
    return dir;
  }
  return "/var/lib/oarbank/module-users";
}

std::string dynamic_uid_dir() {
  if (const char* dir = std::getenv(kDynamicUidDirEnvVar); dir != nullptr && dir[0] == '/') {
    return dir;
  }
  return "/run/systemd/dynamic-uid";
}

std::string subordinate_ids_dir() {
  if (const char* dir = std::getenv(kSubordinateIdsDirEnvVar); dir != nullptr && dir[0] == '/') {
    return dir;
  }
  return "/etc";
}

std::string leased_uid_conflict(std::uint32_t uid) {
  const std::string reservation = dynamic_uid_dir() + "/" + std::to_string(uid);
  struct stat st {};
  if (::lstat(reservation.c_str(), &st) == 0) {
    return "reserved by systemd for a dynamic user (" + reservation + " exists)";
  }
  const std::string passwd = file_text("/etc/passwd");
  if (database_names(passwd, uid)) return "named by /etc/passwd";
  if (database_names(passwd, uid, true)) return "named by /etc/passwd as an account's group";
  if (database_names(file_text("/etc/group"), uid)) return "named by /etc/group";
  // The number is the module's uid and its gid: a range of either file holding it lets the
  // range's owner be the module's user or group. A missing file delegates nothing.
  for (const char* name : {"/subuid", "/subgid"}) {
    const std::string path = subordinate_ids_dir() + name;
    if (auto line = subordinate_range_holding(file_text(path), uid)) {
      return "delegated by " + path + " (" + *line +
             ") to that user as a subordinate id, which newuidmap and newgidmap let them run "
             "processes as";
    }
  }
  return "";
}

bool user_database_names(std::uint32_t id) {
  // The files first (no process to start), and systemd's reservations of dynamic users: what
  // every later run of the id looks at again.
  if (!leased_uid_conflict(id).empty()) return true;
  // Then NSS (systemd's dynamic users, LDAP, sssd, ...), through getent(1): this binary is
  // static, and an NSS module loaded into it brings its own shared libc (libnss_systemd
  // crashes there), so the lookup runs in a program of the system's own. Where nsswitch.conf
  // names nothing but the files for both (or there is none: glibc then reads the files), the
  // files above were the whole database.
  if (!nss_beyond_files()) return false;
  return getent_names("passwd", id) || getent_names("group", id);
}

UidLease lease_module_user(const std::string& dir, const std::string& id,
                           const ModuleUserRange& range, const std::vector<std::string>& paths,
                           std::int64_t now, ModuleUserDatabase* database) {
  LockedRegistry registry(dir, true);
  auto lease = registry.lease(id);
  bool changed = false;
  if (lease) {
    // Leased before: the number was free then, but systemd (whose range for dynamic users is
    // module_users' default) or an administrator may have given it to another user since.
    if (auto conflict = leased_uid_conflict(lease->uid); !conflict.empty()) {
      throw Error(
          ErrorKind::Unenforceable,
          "module id " + id + " holds uid " + std::to_string(lease->uid) +
              " (leased from the node's module_users range " + std::to_string(range.first) + "-" +
              std::to_string(range.last) + "), which is now " + conflict +
              ": the module would share it with another user, so it does not run; move "
              "module_users to a range that systemd's DynamicUser= (61184-65519), "
              "the user database and /etc/subuid do not use, and lease the id anew (its files "
              "re-owned, sandbox-ctl reclaim " +
              id + ")");
    }
  }
  if (!lease) {
    // A number reserved for this very id without its lease (a crash between the two
    // writes) is this id's again; one reserved for another is taken. A number a running
    // process holds as a uid or gid is taken too (attack review: a process of that uid
    // outside the sandbox, an administrator's `setpriv --reuid N` or a leftover of another
    // tool, would reach the module's processes, /dev/shm and directories as their owner).
    std::optional<std::vector<std::uint32_t>> running;  // read once, when first needed
    auto uid = choose_module_uid(range.first, range.last, [&](std::uint32_t n) {
      const auto held = registry.holder(n);
      if (held && *held != id) return true;
      if (!running) running = ids_of_running_processes();
      if (std::binary_search(running->begin(), running->end(), n)) return true;
      return !held && user_database_names(n);
    });
    if (!uid) {
      throw Error(ErrorKind::Unenforceable,
                  "no uid is left in the node's module_users range " + std::to_string(range.first) +
                      "-" + std::to_string(range.last) +
                      " (every number is leased, named by the user database, held by a "
                      "subordinate range of /etc/subuid or /etc/subgid or by a running "
                      "process): reclaim leases "
                      "of ids no longer run (sandbox-ctl leases, sandbox-ctl reclaim ID) or "
                      "widen the range");
    }
    if (!registry.holder(*uid)) registry.reserve(*uid, id);
    lease = UidLease{id, *uid, *uid, now, now, {}};
    changed = true;
  }
  if (now - lease->last_run >= kLastRunGranularity) {
    lease->last_run = now;
    changed = true;
  }
  for (const auto& path : paths) changed = remember_lease_path(*lease, path) || changed;
  if (changed) registry.write(*lease);
  if (database != nullptr) {
    database->passwd = registry.user_database_file(*lease, kPasswdSuffix,
                                                   module_passwd_text(*lease, database->home));
    database->group = registry.user_database_file(*lease, kGroupSuffix, module_group_text(*lease));
  }
  return *lease;
}

void remember_lease_paths(const std::string& dir, const std::string& id,
                          const std::vector<std::string>& paths) {
  LockedRegistry registry(dir, true);
  auto lease = registry.lease(id);
  if (!lease) return;
  bool changed = false;
  for (const auto& path : paths) changed = remember_lease_path(*lease, path) || changed;
  if (changed) registry.write(*lease);
}

void forget_lease_paths(const std::string& dir, const std::string& id,
                        const std::vector<std::string>& paths) {
  LockedRegistry registry(dir, true);
  auto lease = registry.lease(id);
  if (!lease) return;
  const auto before = lease->paths.size();
  std::erase_if(lease->paths, [&](const std::string& path) {
    return std::find(paths.begin(), paths.end(), path) != paths.end();
  });
  if (lease->paths.size() != before) registry.write(*lease);
}

std::vector<UidLease> list_module_users(const std::string& dir) {
  LockedRegistry registry(dir, false);
  return registry.all();
}

std::optional<std::string> module_id_of_uid(const std::string& dir, std::uint32_t uid) {
  LockedRegistry registry(dir, false);
  if (!registry.exists()) return std::nullopt;
  return registry.holder(uid);
}

std::string reclaim_obstacle(const UidLease& lease, std::int64_t now, std::uint32_t days) {
  if (!lease_is_due(lease, now, days)) {
    return "its last run was " + std::to_string((now - lease.last_run) / 86400) +
           " day(s) ago, and the node reclaims a lease after " + std::to_string(days) +
           " (module_users.reclaim_after_days)";
  }
  for (const auto& path : lease.paths) {
    // Attack review (session 16): nftw does not follow a symbolic link at the top either, so
    // a path that became one (the directory moved, a link left in its place) was "clean"
    // while the files stayed the uid's. A path that is gone is: what the advice below asks for.
    struct stat top {};
    if (::lstat(path.c_str(), &top) == 0 && S_ISLNK(top.st_mode)) {
      return path +
             " is a symbolic link now, and what it points to is not looked through: "
             "look for files of uid " +
             std::to_string(lease.uid) + " where the directory went, then remove the link";
    }
    walk_uid = lease.uid;
    walk_found.clear();
    // FTW_PHYS: symbolic links not followed; FTW_MOUNT: another file system is not walked.
    const int rc = ::nftw(path.c_str(), find_owned, 32, FTW_PHYS | FTW_MOUNT);
    if (rc == 1) {
      // Attack review (session 14): the advice names what was found, never `path` itself: the
      // paths are what the policy named (a data path may be a directory every module uses,
      // or one a refused run named), and "rm -r" of it would take what is not this module's.
      return walk_found + " still belongs to uid or gid " + std::to_string(lease.uid) +
             ": re-own or remove what the module left first (find " + shell_word(path) +
             " -xdev \\( -uid " + std::to_string(lease.uid) + " -o -gid " +
             std::to_string(lease.gid) + " \\) lists it all)";
    }
    if (rc != 0 && errno != ENOENT) {
      return "cannot look through " + path + " for files of uid " + std::to_string(lease.uid) +
             ": " + errno_text(errno);
    }
  }
  return "";
}

UidLease reclaim_module_user(const std::string& dir, const std::string& id, std::uint32_t days,
                             std::int64_t now, bool (*still_running)(const std::string& id)) {
  LockedRegistry registry(dir, false);
  auto lease = registry.exists() ? registry.lease(id) : std::nullopt;
  if (!lease) {
    throw Error(ErrorKind::NotFound, "module id " + id + " has no lease (registry " + dir + ")");
  }
  if (still_running(id)) {
    throw Error(ErrorKind::Busy, "module id " + id + " is running: its lease stays");
  }
  if (auto obstacle = reclaim_obstacle(*lease, now, days); !obstacle.empty()) {
    throw Error(ErrorKind::Unenforceable, "the lease of " + id + " (uid " +
                                              std::to_string(lease->uid) +
                                              ") cannot be reclaimed: " + obstacle);
  }
  registry.remove(*lease);
  return *lease;
}

}  // namespace oarbank
