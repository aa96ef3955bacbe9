// sandbox-run's parent side (sandbox-linux.md, "Verification" and "Process container"):
// spawn the launcher in its container, read its status channel, verify /proc/<pid>/status
// once the module's exec has happened, wait, and tear the container down however the run
// ends. The command line and the choice of container are cmd_sandbox_run.cpp's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "supervise/cgroup_leaf.hpp"
#include "supervise/denial_listener.hpp"
#include "supervise/exec_verification.hpp"
#include "supervise/run_state.hpp"

namespace oarbank {

struct SupervisedLaunch {
  std::string id;
  // The launcher's steps, run in the child (sandbox-exec's launch(), prepared in this
  // process): given the status channel's write end, it execs the module or _exits.
  void (*launcher)(void* context, int status_fd) = nullptr;
  void* launcher_context = nullptr;
  std::optional<CgroupLeaf> leaf;      // none: the process group (and subreaper) only
  // Called with the child's pid once it exists (the egress proxy's thread starts here: the
  // child must be cloned from a process with a single thread).
  std::function<void(pid_t)> after_spawn;
  ExecExpectation expected;
  std::optional<double> timeout_seconds;
  double kill_after_seconds = 10;      // from SIGTERM to SIGKILL at a stop
  // Issue 14: answers and records the filter's refusals when the launcher sends its listener
  // over the status channel (docs/denials.md); stopped once the module's processes are gone.
  SeccompListener* seccomp_listener = nullptr;
};

enum class RunEnd {
  Exited,              // the module exited (exit_code is its status)
  Signaled,            // the module was killed by a signal (exit code 128+N)
  LauncherFailed,      // sandbox-exec refused or failed before the exec (its code)
  VerificationFailed,  // the exec happened, but /proc/<pid>/status was not as required (70)
};

struct RunResult {
  RunEnd end = RunEnd::Exited;
  int exit_code = 0;        // what sandbox-run exits with
  int module_status = -1;   // the module's exit status, when it exited
  int module_signal = 0;    // the signal that ended it, when one did
  bool timed_out = false;
  int stop_signal = 0;      // SIGINT/SIGTERM/SIGHUP that asked sandbox-run to stop
  std::uint64_t oom_kills = 0;  // memory.events oom_kill of the leaf
  std::string launcher_line;    // what the launcher said when it failed
  std::string verification_problem;
  std::optional<std::uint64_t> cpu_usec, memory_peak_bytes;
  double duration_seconds = 0;
};

// Runs the launch to its end. `state` receives the module's pid once spawned. Throws
// Error(StepFailed) only before the launcher runs (nothing is left behind then).
RunResult supervise(SupervisedLaunch& launch, RunState& state);

std::string run_result_to_json(const RunResult& result, const SupervisedLaunch& launch);

}  // namespace oarbank
