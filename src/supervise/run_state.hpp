// The run state of each sandbox-run: a JSON record per module id in the state directory,
// locked (flock) by its sandbox-run for as long as it lives. sandbox-ctl finds a module's
// leaf there; a record whose lock is free belongs to a run that died (SIGKILL, a crash), and
// the next sandbox-run (or sandbox-ctl on that id) tears down what that run left.
//
// A record is an intent before it is a description: it names the leaf before the leaf is
// made, and the module's process before that process may do anything (spawn's gate), so a
// sandbox-run killed at any point leaves nothing that no record names. A record appears in
// the directory already written and locked (made as an O_TMPFILE, locked, then linked into
// place), so a sweep never sees a live run's record unlocked.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sys/unique_fd.hpp"

namespace oarbank {

struct RunRecord {
  std::string id;
  pid_t supervisor_pid = 0;
  std::uint64_t supervisor_start_time = 0;  // against pid reuse, like module_start_time
  pid_t module_pid = 0;  // the launcher, then the module (one process: the launcher execs it)
  std::uint64_t module_start_time = 0;  // /proc/<pid>/stat field 22, against pid reuse
  pid_t process_group = 0;
  std::string cgroup;  // the leaf's absolute path (made, or about to be); empty: none
  // The module is to get a network namespace of its own, as the claim foresaw it (the plan
  // decides: module_run.cpp). Anonymous: it lives as long as a process or descriptor holds
  // it, nothing to remove; nothing acts on this field.
  bool netns = false;
  std::string phase = "starting";  // "starting" until the module is spawned, then "running"
  std::int64_t started_at = 0;     // Unix time
};

std::string run_record_to_json(const RunRecord& record);
// nullopt for a file that is not a run record.
std::optional<RunRecord> run_record_from_json(const std::string& text);

// $OARBANK_STATE_DIR, else /run/oarbank/runs for root, else $XDG_RUNTIME_DIR/oarbank/runs;
// throws Error(StepFailed) for a user without XDG_RUNTIME_DIR.
std::string run_state_dir();

// The state directory, opened component by component from / without following a symbolic
// link at any of them (O_NOFOLLOW; never a path string again after this). Every component
// must be a directory owned by root or this user and writable by no one else (unless sticky);
// the directory itself this user's alone. `create`: missing components are made (the last
// 0700). Unprivileged, a component of this user's that others may write is repaired (go-w;
// the last 0700): the module runs as this user and can chmod it (Landlock does not govern
// chmod), and nothing written meanwhile is trusted anyway (trusted_record). `repaired` names
// what was. As root the module cannot have done it: refused. Throws Error(StepFailed), its
// line naming the directory as `what` (the module user registry is opened so too).
UniqueFd open_state_dir(const std::string& dir, bool create, std::string* repaired = nullptr,
                        const char* what = "the run state directory");

// Whether a record's leaf is the leaf of its own id under the cgroup file system, and whether
// its process group's leader is still the module's process (pid and start time).
bool record_names_its_leaf(const RunRecord& record);
bool record_group_is_alive(const RunRecord& record);
// Sends `sig` to the recorded process group, through a pidfd of its leader taken before the
// start time is compared (so a recycled pid cannot be hit), with PIDFD_SIGNAL_PROCESS_GROUP
// (Linux 6.9); before that kernel, kill(-group) right after the comparison. 0 or an errno
// (ESRCH: the leader is not the recorded process).
int signal_recorded_group(const RunRecord& record, int sig);

// The state file of one run, held locked while the run lives.
class RunState {
 public:
  // Tears down what a dead run of the same id left, then puts `intent` in place as the id's
  // record, locked. Throws Error(Busy) when a live run holds the id (its supervisor alive),
  // Error(StepFailed) otherwise.
  static RunState claim(const std::string& dir, const RunRecord& intent);
  // The same in the directory open_state_dir(dir, true) returned (sandbox-run walks the path
  // once per run, not once per use: the descriptor is the directory that walk checked, so no
  // later walk could find more). `dir` names it in messages.
  static RunState claim(UniqueFd dir_fd, const std::string& dir, const RunRecord& intent);
  RunState(RunState&&) noexcept = default;
  RunState& operator=(RunState&&) noexcept = default;
  ~RunState();

  void write(const RunRecord& record);
  [[nodiscard]] const RunRecord& record() const { return record_; }

  // For the spawned child, which records itself before it does anything else (spawn's
  // CLONE_VFORK suspends this process until the child's exec, so this process cannot): the
  // record's text up to its module fields, and the descriptor to write it to.
  [[nodiscard]] std::string child_record_prefix() const;
  [[nodiscard]] int fd() const { return fd_.get(); }
  // Removes the file (the lock goes with the descriptor).
  void finish();

 private:
  RunState(UniqueFd dir, std::string name, UniqueFd fd, RunRecord record)
      : dir_(std::move(dir)),
        name_(std::move(name)),
        fd_(std::move(fd)),
        record_(std::move(record)) {}
  UniqueFd dir_;
  std::string name_;
  UniqueFd fd_;
  RunRecord record_;
};

// In the child, before anything else: writes `prefix` with this process's pid (as module and
// group leader) and start time as the record in `fd`, mtime and ctime together. No
// allocation (async-signal-safe: it runs between clone and exec). 0 or an errno.
int record_self_as_module(int fd, const char* prefix, std::size_t prefix_length);

// Reads the live or dead record of `id`; `alive` says whether a sandbox-run still holds it.
// A dead record is torn down on the way (`cleaned` says so). nullopt: no trusted record.
std::optional<RunRecord> read_run_record(const std::string& dir, const std::string& id, bool& alive,
                                         bool* cleaned = nullptr);

// The ids that have a record in `dir` (live or dead, trusted or not: read_run_record judges
// each), sorted. Empty when the directory is not there. For sandbox-ctl list.
std::vector<std::string> run_record_ids(const std::string& dir);

// Tears down what dead runs left: their leaves (killed and removed) and process groups (when
// the recorded leader still is the same process), then their records; removes entries that
// are not trusted records (another's file, a link, a FIFO). Returns the ids cleaned.
std::vector<std::string> clean_stale_runs(const std::string& dir);
// The same in a directory open_state_dir returned.
std::vector<std::string> clean_stale_runs(int dir_fd);

// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); 0 if there is no pid.
std::uint64_t process_start_time(pid_t pid);

}  // namespace oarbank
