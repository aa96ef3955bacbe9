// The run state of each live sandbox-run: a JSON file per module id in the state directory,
// locked (flock) by its sandbox-run for as long as it lives. sandbox-ctl finds a module's
// leaf there; a file whose lock is free belongs to a run that died (SIGKILL, a crash), and the
// next sandbox-run tears down what that run left (its leaf, its process group).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sys/unique_fd.hpp"

namespace oarbank {

struct RunRecord {
  std::string id;
  pid_t supervisor_pid = 0;
  pid_t module_pid = 0;  // the launcher, then the module (one process: the launcher execs it)
  std::uint64_t module_start_time = 0;  // /proc/<pid>/stat field 22, against pid reuse
  pid_t process_group = 0;
  std::string cgroup;  // the leaf's absolute path; empty: process group only
  std::int64_t started_at = 0;  // Unix time
};

std::string run_record_to_json(const RunRecord& record);
// nullopt for a file that is not a run record.
std::optional<RunRecord> run_record_from_json(const std::string& text);

// $OARBANK_STATE_DIR, else /run/oarbank/runs for root, else $XDG_RUNTIME_DIR/oarbank/runs;
// throws Error(StepFailed) for a user without XDG_RUNTIME_DIR. The directory and its parents
// must be trusted (owned by root or this user, writable by no one else) wherever it is read.
std::string run_state_dir();

// Whether a record's leaf is the leaf of its own id under the cgroup file system, and whether
// its process group's leader is still the module's process (pid and start time).
bool record_names_its_leaf(const RunRecord& record);
bool record_group_is_alive(const RunRecord& record);

// The state file of one run, held locked while the run lives.
class RunState {
 public:
  // Creates the directory (0700) and the id's file, locked. Throws Error(Busy) when a live
  // run holds the id; a dead run's file is taken over (after its leftovers are torn down).
  static RunState claim(const std::string& dir, const std::string& id);
  RunState(RunState&&) noexcept = default;
  RunState& operator=(RunState&&) noexcept = default;
  ~RunState();

  void write(const RunRecord& record);
  // Removes the file (the lock goes with the descriptor).
  void finish();

 private:
  RunState(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  std::string path_;
  UniqueFd fd_;
};

// Reads the live or dead record of `id`; `alive` says whether a sandbox-run still holds it.
std::optional<RunRecord> read_run_record(const std::string& dir, const std::string& id,
                                         bool& alive);

// Tears down what dead runs left: their leaves (killed and removed) and process groups (when
// the recorded leader still is the same process), then their files. Returns the ids cleaned.
std::vector<std::string> clean_stale_runs(const std::string& dir);

// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); 0 if there is no pid.
std::uint64_t process_start_time(pid_t pid);

}  // namespace oarbank
