#include "supervise/run_state.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "policy/module_id.hpp"
#include "supervise/cgroup_leaf.hpp"
#include "supervise/spawn.hpp"
#include "sys/error.hpp"
#include "sys/text_file.hpp"

namespace oarbank {
namespace {

constexpr const char* kSuffix = ".json";

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// A record is trusted only as this user wrote it: a regular file of this user's, one link,
// mode 0600, and not changed since its last write by anything but a write (a chmod, link or
// rename sets ctime, and every write of ours sets mtime and ctime together). So a record that
// another user could write (the module chmod-ed it, or its directory) is never acted on.
bool trusted_record_file(const struct stat& st) {
  return S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && st.st_nlink == 1 &&
         (st.st_mode & 077) == 0 && st.st_ctim.tv_sec == st.st_mtim.tv_sec &&
         st.st_ctim.tv_nsec == st.st_mtim.tv_nsec;
}

bool same_file(int dir_fd, const std::string& name, int fd) {
  struct stat by_fd {
  }, by_name{};
  return ::fstat(fd, &by_fd) == 0 &&
         ::fstatat(dir_fd, name.c_str(), &by_name, AT_SYMLINK_NOFOLLOW) == 0 &&
         by_fd.st_dev == by_name.st_dev && by_fd.st_ino == by_name.st_ino;
}

// The record in `fd` when it is trusted and is `id`'s.
std::optional<RunRecord> trusted_record(int fd, const std::string& id) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !trusted_record_file(st)) return std::nullopt;
  auto record = run_record_from_json(read_fd_text(fd));
  if (!record || record->id != id) return std::nullopt;
  return record;
}

// Opens a state file without following a link and without blocking on a FIFO (O_NONBLOCK),
// and only when it is a regular file: anything else there is not a record.
UniqueFd open_record_file(int dir_fd, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
    return UniqueFd();
  }
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat opened {};
  if (!fd.valid() || ::fstat(fd.get(), &opened) != 0 || !S_ISREG(opened.st_mode)) {
    return UniqueFd();
  }
  return fd;
}

void write_record(int fd, const RunRecord& record, const std::string& where) {
  // Written over the old text, then cut to its length: a reader never sees an empty file.
  const std::string text = run_record_to_json(record);
  if (::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()) ||
      ::ftruncate(fd, static_cast<off_t>(text.size())) != 0) {
    throw Error(ErrorKind::StepFailed,
                "writing the run record " + where + ": " + errno_text(errno));
  }
}

bool supervisor_is_alive(const RunRecord& record) {
  return record.supervisor_pid > 0 && record.supervisor_start_time != 0 &&
         process_start_time(record.supervisor_pid) == record.supervisor_start_time;
}

// Tears down what a dead run left. The caller holds the record's lock.
void tear_down_dead_run(const RunRecord& record) {
  if (record_names_its_leaf(record)) {
    remove_cgroup(record.cgroup);  // the module and everything it started, in its leaf
  } else if (record.cgroup.empty()) {
    // Descendants that left the group are out of reach without a cgroup (and the filter
    // refuses setsid and setpgid, so a module's descendants do not leave it).
    signal_recorded_group(record, SIGKILL);
  }
}

}  // namespace

UniqueFd open_state_dir(const std::string& dir, bool create, std::string* repaired,
                        const char* what_dir) {
  auto untrusted = [&](const std::string& what) {
    return Error(ErrorKind::StepFailed,
                 std::string(what_dir) + " " + dir + " cannot be trusted: " + what);
  };
  if (dir.empty() || dir[0] != '/') throw untrusted("not an absolute path");
  UniqueFd fd(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) throw untrusted("open /: " + errno_text(errno));
  const uid_t me = ::geteuid();
  std::string sofar;
  for (std::size_t start = 1; start < dir.size();) {
    std::size_t slash = dir.find('/', start);
    if (slash == std::string::npos) slash = dir.size();
    const std::string part = dir.substr(start, slash - start);
    start = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") throw untrusted("it contains \"..\"");
    sofar += "/" + part;
    const bool last = dir.find_first_not_of('/', slash) == std::string::npos;
    // O_NOFOLLOW on every component: a symbolic link anywhere is ELOOP (or ENOTDIR).
    UniqueFd next(
        ::openat(fd.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid() && errno == ENOENT && create) {
      if (::mkdirat(fd.get(), part.c_str(), last ? 0700 : 0755) != 0 && errno != EEXIST) {
        throw Error(ErrorKind::StepFailed, "mkdir " + sofar + ": " + errno_text(errno));
      }
      next.reset(::openat(fd.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
    if (!next.valid()) {
      if (errno == ENOENT && !create) return UniqueFd();
      if (errno == ELOOP || errno == ENOTDIR) {
        throw untrusted(sofar + " is not a directory (a symbolic link?)");
      }
      throw untrusted(sofar + ": " + errno_text(errno));
    }
    struct stat st {};
    if (::fstat(next.get(), &st) != 0) throw untrusted(sofar + ": " + errno_text(errno));
    if (st.st_uid != me && (last || st.st_uid != 0)) {
      throw untrusted(sofar + " belongs to uid " + std::to_string(st.st_uid));
    }
    const bool others_write = (st.st_mode & 022) != 0 && (last || (st.st_mode & S_ISVTX) == 0);
    if (others_write) {
      // Unprivileged, the module runs as this user and can chmod this user's directories:
      // repair them rather than let every later run fail. As root, the module user cannot
      // have done it: a setting of root's own, refused.
      const mode_t wanted = last ? 0700 : (st.st_mode & 07777 & ~mode_t{022});
      if (me == 0 || st.st_uid != me || ::fchmod(next.get(), wanted) != 0) {
        throw untrusted(sofar + " is writable by others (mode " + mode_text(st.st_mode) + ")");
      }
      if (repaired != nullptr) {
        *repaired += (repaired->empty() ? "" : ", ") + sofar + " (mode " + mode_text(st.st_mode) +
                     ", now " + mode_text(wanted) + ")";
      }
    }
    fd = std::move(next);
  }
  return fd;
}

bool record_names_its_leaf(const RunRecord& record) {
  // A record is trusted no further than its shape: the leaf of its own id, in cgroupfs.
  const std::string name = "/" + leaf_name_for(record.id);
  struct statfs fs {};
  return !module_id_problem(record.id) && record.cgroup.ends_with(name) &&
         record.cgroup.find("/../") == std::string::npos &&
         ::statfs(record.cgroup.c_str(), &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

bool record_group_is_alive(const RunRecord& record) {
  // The leader is still the module's process (same pid, same start time): its group is the
  // module's, not a group that reused the number.
  return record.process_group > 1 && record.module_pid == record.process_group &&
         record.module_start_time != 0 &&
         process_start_time(record.module_pid) == record.module_start_time;
}

int signal_recorded_group(const RunRecord& record, int sig) {
  if (record.process_group <= 1 || record.module_pid != record.process_group ||
      record.module_start_time == 0) {
    return ESRCH;
  }
  // The pidfd first, then the start time: the pidfd cannot come to mean another process.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, record.module_pid, 0)));
  if (!pidfd.valid() && errno != ENOSYS) return errno;  // ENOSYS: before Linux 5.3, by number
  if (process_start_time(record.module_pid) != record.module_start_time) return ESRCH;
  // (Before Linux 6.9, no group flag: the group by number, its leader checked just above.)
  return signal_process_group(pidfd.get(), record.process_group, sig);
}

std::string run_record_to_json(const RunRecord& r) {
  nlohmann::json j{
      {"id", r.id},
      {"phase", r.phase},
      {"supervisor_pid", r.supervisor_pid},
      {"supervisor_start_time", r.supervisor_start_time},
      {"module_pid", r.module_pid},
      {"module_start_time", r.module_start_time},
      {"process_group", r.process_group},
      {"cgroup", r.cgroup.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.cgroup)},
      {"container", r.cgroup.empty() ? "process-group" : "cgroup"},
      {"netns", r.netns},
      {"started_at", r.started_at}};
  return j.dump() + "\n";
}

std::optional<RunRecord> run_record_from_json(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  try {
    RunRecord r;
    r.id = j.at("id").get<std::string>();
    r.phase = j.at("phase").get<std::string>();
    r.supervisor_pid = j.at("supervisor_pid").get<pid_t>();
    r.supervisor_start_time = j.at("supervisor_start_time").get<std::uint64_t>();
    r.module_pid = j.at("module_pid").get<pid_t>();
    r.module_start_time = j.at("module_start_time").get<std::uint64_t>();
    r.process_group = j.at("process_group").get<pid_t>();
    if (j.at("cgroup").is_string()) r.cgroup = j.at("cgroup").get<std::string>();
    r.netns = j.at("netns").get<bool>();
    r.started_at = j.at("started_at").get<std::int64_t>();
    return r;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

std::string run_state_dir() {
  if (const char* dir = std::getenv("OARBANK_STATE_DIR"); dir != nullptr && dir[0] == '/') {
    return dir;
  }
  if (::geteuid() == 0) return "/run/oarbank/runs";
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && xdg[0] == '/') {
    return std::string(xdg) + "/oarbank/runs";
  }
  // No shared fallback (/tmp): another user could prepare it and name what gets killed.
  throw Error(ErrorKind::StepFailed,
              "no run state directory: set XDG_RUNTIME_DIR (or OARBANK_STATE_DIR) to a directory "
              "of this user's");
}

RunState RunState::claim(const std::string& dir, const RunRecord& intent) {
  return claim(open_state_dir(dir, true), dir, intent);
}

RunState RunState::claim(UniqueFd dir_fd, const std::string& dir, const RunRecord& intent) {
  const std::string name = intent.id + kSuffix;
  const std::string path = dir + "/" + name;
  // The record is written and locked before it has a name: nobody can see it unlocked.
  UniqueFd fd(::openat(dir_fd.get(), ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    throw Error(ErrorKind::StepFailed,
                "the run state directory " + dir + ": open(O_TMPFILE): " + errno_text(errno) +
                    " (it needs a file system with O_TMPFILE: tmpfs, ext4, xfs, btrfs)");
  }
  if (::flock(fd.get(), LOCK_EX) != 0) {
    throw Error(ErrorKind::StepFailed, "flock the run record " + path + ": " + errno_text(errno));
  }
  write_record(fd.get(), intent, path);
  const std::string self = "/proc/self/fd/" + std::to_string(fd.get());
  using namespace std::chrono_literals;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    // link(2) fails with EEXIST rather than replace: only whoever holds the lock of the
    // record at a name removes it, so a live run's record is never replaced.
    if (::linkat(AT_FDCWD, self.c_str(), dir_fd.get(), name.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      // The link set ctime: written once more, so that mtime and ctime agree again.
      write_record(fd.get(), intent, path);
      return RunState(std::move(dir_fd), name, std::move(fd), intent);
    }
    if (errno != EEXIST) {
      throw Error(ErrorKind::StepFailed, "link the run record " + path + ": " + errno_text(errno));
    }
    struct stat st {};
    if (::fstatat(dir_fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
      // Not a record of this user's (a link, a FIFO, another's file): never read, removed.
      if (::unlinkat(dir_fd.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
        throw Error(ErrorKind::StepFailed,
                    path + " is not a run record of this user's and cannot be removed: " +
                        errno_text(errno));
      }
      continue;
    }
    UniqueFd old = open_record_file(dir_fd.get(), name);
    if (!old.valid()) continue;
    if (::flock(old.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK) {
        throw Error(ErrorKind::StepFailed, "flock " + path + ": " + errno_text(errno));
      }
      // Locked: by its live run, or by a sweep tearing a dead one down (wait for it).
      auto held = run_record_from_json(read_fd_text(old.get()));
      if (!held || supervisor_is_alive(*held)) {
        throw Error(ErrorKind::Busy,
                    "module id " + intent.id + " is already running (" + path +
                        (held ? ", sandbox-run pid " + std::to_string(held->supervisor_pid)
                              : std::string()) +
                        ")");
      }
      std::this_thread::sleep_for(2ms);
      continue;
    }
    if (!same_file(dir_fd.get(), name, old.get())) continue;  // removed meanwhile
    // A dead run of this id: tear down what it left before the id is reused.
    if (auto previous = trusted_record(old.get(), intent.id)) tear_down_dead_run(*previous);
    if (::unlinkat(dir_fd.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
      throw Error(ErrorKind::StepFailed,
                  "removing the dead run record " + path + ": " + errno_text(errno));
    }
  }
  throw Error(ErrorKind::Busy, "module id " + intent.id +
                                   " is being started and stopped concurrently (" + path + ")");
}

std::string RunState::child_record_prefix() const {
  RunRecord running = record_;
  running.phase = "running";
  // The same object without the three fields the child adds, and without its closing brace.
  auto j = nlohmann::json::parse(run_record_to_json(running));
  j.erase("module_pid");
  j.erase("module_start_time");
  j.erase("process_group");
  std::string text = j.dump();
  text.pop_back();  // '}'
  return text + ",";
}

int record_self_as_module(int fd, const char* prefix, std::size_t prefix_length) {
  char buffer[8192];
  if (prefix_length > sizeof buffer - 128) return ENAMETOOLONG;
  std::size_t n = 0;
  for (; n < prefix_length; ++n) buffer[n] = prefix[n];
  auto append = [&](const char* text) {
    while (*text != '\0') buffer[n++] = *text++;
  };
  auto append_number = [&](std::uint64_t value) {
    char digits[24];
    int count = 0;
    do {
      digits[count++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0);
    while (count > 0) buffer[n++] = digits[--count];
  };
  // The start time (field 22 of /proc/self/stat), read without the allocating helpers.
  char stat[1024];
  const int stat_fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (stat_fd < 0) return errno;
  const ssize_t got = ::read(stat_fd, stat, sizeof stat - 1);
  ::close(stat_fd);
  if (got <= 0) return EIO;
  stat[got] = '\0';
  const char* close = nullptr;
  for (const char* c = stat; *c != '\0'; ++c) {
    if (*c == ')') close = c;
  }
  if (close == nullptr) return EIO;
  const char* field = close + 2;  // field 3
  for (int at = 3; at < 22 && field != nullptr; ++at) {
    while (*field != '\0' && *field != ' ') ++field;
    field = *field == ' ' ? field + 1 : nullptr;
  }
  if (field == nullptr) return EIO;
  std::uint64_t start_time = 0;
  for (; *field >= '0' && *field <= '9'; ++field) {
    start_time = start_time * 10 + static_cast<std::uint64_t>(*field - '0');
  }
  const auto pid = static_cast<std::uint64_t>(::getpid());
  append("\"module_pid\":");
  append_number(pid);
  append(",\"module_start_time\":");
  append_number(start_time);
  append(",\"process_group\":");
  append_number(pid);
  append("}\n");
  if (::pwrite(fd, buffer, n, 0) != static_cast<ssize_t>(n)) return errno == 0 ? EIO : errno;
  if (::ftruncate(fd, static_cast<off_t>(n)) != 0) return errno;
  return 0;
}

RunState::~RunState() { finish(); }

void RunState::write(const RunRecord& record) {
  write_record(fd_.get(), record, name_);
  record_ = record;
}

void RunState::finish() {
  if (!fd_.valid()) return;
  if (same_file(dir_.get(), name_, fd_.get())) ::unlinkat(dir_.get(), name_.c_str(), 0);
  fd_.reset();
  dir_.reset();
}

std::optional<RunRecord> read_run_record(const std::string& dir, const std::string& id, bool& alive,
                                         bool* cleaned) {
  alive = false;
  if (cleaned != nullptr) *cleaned = false;
  if (module_id_problem(id)) return std::nullopt;
  UniqueFd dir_fd = open_state_dir(dir, false);
  if (!dir_fd.valid()) return std::nullopt;
  const std::string name = id + kSuffix;
  UniqueFd fd = open_record_file(dir_fd.get(), name);
  if (!fd.valid()) return std::nullopt;
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    alive = errno == EWOULDBLOCK;
    return alive ? trusted_record(fd.get(), id) : std::nullopt;
  }
  // Dead: its run was killed. Tear down what it left, as the next start would.
  if (!same_file(dir_fd.get(), name, fd.get())) return std::nullopt;
  auto record = trusted_record(fd.get(), id);
  if (record) tear_down_dead_run(*record);
  ::unlinkat(dir_fd.get(), name.c_str(), 0);
  if (cleaned != nullptr) *cleaned = true;
  return record;
}

std::vector<std::string> run_record_ids(const std::string& dir) {
  std::vector<std::string> ids;
  UniqueFd dir_fd = open_state_dir(dir, false);
  if (!dir_fd.valid()) return ids;
  DIR* listing = ::fdopendir(::dup(dir_fd.get()));
  if (listing == nullptr) return ids;
  while (const dirent* entry = ::readdir(listing)) {
    std::string name = entry->d_name;
    if (!name.ends_with(kSuffix)) continue;
    std::string id = name.substr(0, name.size() - std::char_traits<char>::length(kSuffix));
    if (!module_id_problem(id)) ids.push_back(std::move(id));
  }
  ::closedir(listing);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<std::string> clean_stale_runs(const std::string& dir) {
  UniqueFd dir_fd;
  try {
    dir_fd = open_state_dir(dir, false);
  } catch (const Error&) {
    return {};  // claim() names the problem
  }
  if (!dir_fd.valid()) return {};
  return clean_stale_runs(dir_fd.get());
}

std::vector<std::string> clean_stale_runs(int dir_fd) {
  std::vector<std::string> cleaned;
  DIR* listing = ::fdopendir(::dup(dir_fd));
  if (listing == nullptr) return cleaned;
  while (const dirent* entry = ::readdir(listing)) {
    std::string name = entry->d_name;
    if (!name.ends_with(kSuffix)) continue;
    std::string id = name.substr(0, name.size() - std::char_traits<char>::length(kSuffix));
    if (module_id_problem(id)) continue;
    // Another's file, a link or a FIFO is not read (claim() removes it when it needs the name).
    UniqueFd fd = open_record_file(dir_fd, name);
    struct stat st {};
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || st.st_uid != ::geteuid()) continue;
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // alive
    if (!same_file(dir_fd, name, fd.get())) continue;         // finished and removed meanwhile
    // Dead. Its record is acted on only if trusted; either way it goes.
    if (auto record = trusted_record(fd.get(), id)) tear_down_dead_run(*record);
    ::unlinkat(dir_fd, name.c_str(), 0);
    cleaned.push_back(id);
  }
  ::closedir(listing);
  return cleaned;
}

std::uint64_t process_start_time(pid_t pid) {
  if (pid <= 0) return 0;
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return 0;
  std::string text = read_fd_text(fd.get());
  // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
  auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::size_t pos = close + 2;
  for (int field = 3; field < 22; ++field) {
    pos = text.find(' ', pos);
    if (pos == std::string::npos) return 0;
    ++pos;
  }
  return std::strtoull(text.c_str() + pos, nullptr, 10);
}

}  // namespace oarbank
