// sandbox-run's parent side ("Verification" and "Process container" of
// https://docs.codonic.dev/oarbank/spec/sandbox-linux), as its phases (plan/launch_steps.hpp):
// spawn the launcher in its container, await its exec on the status channel, verify
// /proc/<pid>/status once the module's exec has happened, wait, and tear the container down
// however the run ends. What the container is made of (the leaf, the terminal, the proxy) is
// made and released by the module run (module_run.hpp).
#pragma once

#include <signal.h>
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
#include "supervise/spawn.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {

struct SupervisorTerminal;

struct SupervisedLaunch {
  std::string id;
  // The launcher's steps, run in the child (sandbox-exec's launch(), prepared in this
  // process): given the status channel's write end, it execs the module or _exits.
  void (*launcher)(void* context, int status_fd) = nullptr;
  void* launcher_context = nullptr;
  std::optional<CgroupLeaf> leaf;  // none: the process group (and subreaper) only
  // On a terminal, the supervisor's half of the split (terminal_front.hpp); else null.
  SupervisorTerminal* terminal = nullptr;
  // The signal mask the launcher starts with; null: this process's when supervise() starts.
  const sigset_t* launcher_mask = nullptr;
  // SIGPIPE's and SIGXFSZ's dispositions the launcher starts with; null: this process's.
  const CallerDispositions* launcher_dispositions = nullptr;
  // Called with the child's pid once it exists (the egress proxy's thread starts here: the
  // child must be cloned from a process with a single thread).
  std::function<void(pid_t)> after_spawn;
  ExecExpectation expected;
  std::optional<double> timeout_seconds;
  double kill_after_seconds = 10;  // from SIGTERM to SIGKILL at a stop
  // Issue 14: answers and records the filter's refusals when the launcher sends its listener
  // over the status channel (docs/denials.md); stopped once the module's processes are gone.
  SeccompListener* seccomp_listener = nullptr;
  // Where the module's mount namespace goes when the launcher sends it (sandbox-run's child,
  // when the run gives its namespaces back to the node's stock); null: closed at once.
  UniqueFd* module_mounts = nullptr;
  // Where the module's own /tmp goes when the launcher sends it; null: closed at once.
  UniqueFd* own_tmp = nullptr;
  // Called at the teardown, on every path once spawned, when every process of the module is
  // gone but before its first process is reaped: that zombie keeps its pid from being any
  // other process's meanwhile (the audit reader, which attributes Landlock's records by that
  // pid, stops here: docs/denials.md).
  std::function<void()> before_reap;
  // The leaf's cpu.stat and memory.peak, read at the teardown for --result's "cpu_usec" and
  // "memory_peak_bytes": only when a result is wanted (two or three kernfs reads, about 15 us
  // here, on every run). memory.events (the OOM kill sandbox-run reports) is read always.
  bool usage = true;
};

enum class RunEnd {
  Exited,              // the module exited (exit_code is its status)
  Signaled,            // the module was killed by a signal (exit code 128+N)
  LauncherFailed,      // sandbox-exec refused or failed before the exec (its code)
  VerificationFailed,  // the exec happened, but /proc/<pid>/status was not as required (70)
};

struct RunResult {
  RunEnd end = RunEnd::Exited;
  int exit_code = 0;       // what sandbox-run exits with
  int module_status = -1;  // the module's exit status, when it exited
  int module_signal = 0;   // the signal that ended it, when one did
  bool timed_out = false;
  int stop_signal = 0;  // SIGINT/SIGTERM/SIGHUP that asked sandbox-run to stop
  // How a stop (a signal or --timeout) ended in SIGKILL to every process of the container:
  // the module outlived --kill-after, or a second request came; none where it ended by itself.
  // (Or the stop came before the module's exec was verified: nothing of it may run on then.)
  enum class StopKill {
    None,
    AfterGrace,
    SecondRequest,
    BeforeVerified
  } stop_kill = StopKill::None;
  std::uint64_t oom_kills = 0;  // memory.events oom_kill of the leaf
  // pids.events "max" of the leaf (Linux 4.3): forks and clones refused at a pids.max, the
  // leaf's or one above it; nullopt where the leaf has no pids controller.
  std::optional<std::uint64_t> process_limit_hits;
  std::string launcher_line;  // what the launcher said when it failed
  std::string verification_problem;
  std::optional<std::uint64_t> cpu_usec, memory_peak_bytes;
  bool cgroup_container = false;  // the module ran in a leaf (else its process group only)
  double duration_seconds = 0;
};

// Runs the launch to its end: the phases spawn, await-exec, verify, wait and teardown, the
// teardown on every path once spawned. `state` receives the module's pid once spawned.
// Throws Error(StepFailed) when the spawn fails (nothing runs then); whatever else throws
// here does so after the teardown (nothing of the module is left either).
RunResult supervise(SupervisedLaunch& launch, RunState& state);

// --result's JSON line for module `id`.
std::string run_result_to_json(const RunResult& result, const std::string& id,
                               const std::vector<std::string>& notes = {});
// --result's JSON line for a run refused before its launcher started (`id` empty: none was
// chosen yet): its exit code and the line printed.
std::string not_started_result_json(const std::string& id, int exit_code, const std::string& error);

}  // namespace oarbank
