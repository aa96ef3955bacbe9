#include "supervise/run_state.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/statfs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "supervise/cgroup_leaf.hpp"
#include "supervise/module_id.hpp"
#include "sys/error.hpp"
#include "sys/text_file.hpp"

namespace oarbank {
namespace {

constexpr const char* kSuffix = ".json";

// The run state decides what sandbox-run and sandbox-ctl kill: nobody else may be able to
// write it. Every component is a real directory (no symbolic link) owned by root or this user,
// writable by no one else unless sticky (/tmp: others cannot rename what is ours there); the
// directory itself is this user's alone. Returns "" or what is wrong.
std::string untrusted_state_dir(const std::string& dir) {
  std::string sofar;
  for (std::size_t start = 0; start != std::string::npos;) {
    std::size_t slash = dir.find('/', start + 1);
    sofar = dir.substr(0, slash);
    start = slash;
    if (sofar.empty()) continue;
    struct stat st {};
    if (::lstat(sofar.c_str(), &st) != 0) return sofar + ": " + errno_text(errno);
    if (!S_ISDIR(st.st_mode)) return sofar + " is not a directory (a symbolic link?)";
    const bool last = slash == std::string::npos;
    if (st.st_uid != ::geteuid() && (last || st.st_uid != 0)) {
      return sofar + " belongs to uid " + std::to_string(st.st_uid);
    }
    if ((st.st_mode & 022) != 0 && (last || (st.st_mode & S_ISVTX) == 0)) {
      return sofar + " is writable by others";
    }
  }
  return "";
}

void check_state_dir(const std::string& dir) {
  if (auto problem = untrusted_state_dir(dir); !problem.empty()) {
    throw Error(ErrorKind::StepFailed, "the run state directory " + dir +
                                           " cannot be trusted: " + problem);
  }
}

// mkdir -p for the state directory; the last component is private to this user.
void make_state_dir(const std::string& dir) {
  for (std::size_t slash = 1; slash != std::string::npos;) {
    slash = dir.find('/', slash + 1);
    std::string part = dir.substr(0, slash);
    if (::mkdir(part.c_str(), slash == std::string::npos ? 0700 : 0755) != 0 && errno != EEXIST) {
      throw Error(ErrorKind::StepFailed, "mkdir " + part + ": " + errno_text(errno));
    }
  }
  check_state_dir(dir);
}

// Tears down what a dead run left. The caller holds the file's lock.
void tear_down_dead_run(const RunRecord& record) {
  if (record_names_its_leaf(record)) {
    remove_cgroup(record.cgroup);
  } else if (record.cgroup.empty() && record_group_is_alive(record)) {
    // Descendants that left the group are out of reach without a cgroup (and the filter
    // refuses setsid and setpgid, so a module's descendants do not leave it).
    ::kill(-record.process_group, SIGKILL);
  }
}

}  // namespace

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

std::string run_record_to_json(const RunRecord& r) {
  nlohmann::json j{{"id", r.id},
                   {"supervisor_pid", r.supervisor_pid},
                   {"module_pid", r.module_pid},
                   {"module_start_time", r.module_start_time},
                   {"process_group", r.process_group},
                   {"cgroup", r.cgroup.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.cgroup)},
                   {"container", r.cgroup.empty() ? "process-group" : "cgroup"},
                   {"started_at", r.started_at}};
  return j.dump() + "\n";
}

std::optional<RunRecord> run_record_from_json(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  try {
    RunRecord r;
    r.id = j.at("id").get<std::string>();
    r.supervisor_pid = j.at("supervisor_pid").get<pid_t>();
    r.module_pid = j.at("module_pid").get<pid_t>();
    r.module_start_time = j.at("module_start_time").get<std::uint64_t>();
    r.process_group = j.at("process_group").get<pid_t>();
    if (j.at("cgroup").is_string()) r.cgroup = j.at("cgroup").get<std::string>();
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

RunState RunState::claim(const std::string& dir, const std::string& id) {
  make_state_dir(dir);
  const std::string path = dir + "/" + id + kSuffix;
  for (int attempt = 0; attempt < 3; ++attempt) {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) throw Error(ErrorKind::StepFailed, "open " + path + ": " + errno_text(errno));
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK) {
        throw Error(ErrorKind::Busy, "module id " + id + " is already running (" + path + ")");
      }
      throw Error(ErrorKind::StepFailed, "flock " + path + ": " + errno_text(errno));
    }
    // Locked, but the file may have been unlinked by its finishing run between our open and
    // our lock: then lock the new one instead.
    struct stat by_fd {}, by_path {};
    if (::fstat(fd.get(), &by_fd) != 0 || ::stat(path.c_str(), &by_path) != 0 ||
        by_fd.st_ino != by_path.st_ino) {
      continue;
    }
    // A record left by a dead run: tear down what it left before the id is reused.
    if (auto previous = run_record_from_json(read_fd_text(fd.get()))) tear_down_dead_run(*previous);
    return RunState(path, std::move(fd));
  }
  throw Error(ErrorKind::Busy, "module id " + id + " is being started and stopped concurrently");
}

RunState::~RunState() { finish(); }

void RunState::write(const RunRecord& record) {
  const std::string text = run_record_to_json(record);
  if (::ftruncate(fd_.get(), 0) != 0 ||
      ::pwrite(fd_.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    throw Error(ErrorKind::StepFailed, "writing " + path_ + ": " + errno_text(errno));
  }
}

void RunState::finish() {
  if (!fd_.valid()) return;
  ::unlink(path_.c_str());
  fd_.reset();
}

std::optional<RunRecord> read_run_record(const std::string& dir, const std::string& id,
                                         bool& alive) {
  alive = false;
  if (module_id_problem(id)) return std::nullopt;
  const std::string path = dir + "/" + id + kSuffix;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return std::nullopt;
  check_state_dir(dir);
  if (::flock(fd.get(), LOCK_SH | LOCK_NB) != 0) {
    alive = errno == EWOULDBLOCK;
  } else {
    ::flock(fd.get(), LOCK_UN);
  }
  return run_record_from_json(read_fd_text(fd.get()));
}

std::vector<std::string> clean_stale_runs(const std::string& dir) {
  std::vector<std::string> cleaned;
  if (!untrusted_state_dir(dir).empty()) return cleaned;  // claim() names the problem
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) return cleaned;
  while (const dirent* entry = ::readdir(listing)) {
    std::string name = entry->d_name;
    if (!name.ends_with(kSuffix)) continue;
    std::string id = name.substr(0, name.size() - std::char_traits<char>::length(kSuffix));
    if (module_id_problem(id)) continue;
    const std::string path = dir + "/" + name;
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid() || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // alive
    struct stat by_fd {}, by_path {};
    if (::fstat(fd.get(), &by_fd) != 0 || ::stat(path.c_str(), &by_path) != 0 ||
        by_fd.st_ino != by_path.st_ino) {
      continue;  // finished and removed meanwhile
    }
    if (auto record = run_record_from_json(read_fd_text(fd.get()))) tear_down_dead_run(*record);
    ::unlink(path.c_str());
    cleaned.push_back(id);
  }
  ::closedir(listing);
  return cleaned;
}

std::uint64_t process_start_time(pid_t pid) {
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
