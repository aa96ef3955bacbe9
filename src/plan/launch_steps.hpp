// The launch's steps as data: one list, in the order they run, from which launch() walks the
// launcher's part, --explain lists its steps, the status channel and "step X failed" messages
// take their words, and the test seam (apply/launch_hooks.hpp) names the step it skips.
// Pure: no kernel call here (apply/ and supervise/ do the steps).
//
// The names are part of the interface (stderr lines, the status channel, --explain): change
// them only by adding.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "sys/error.hpp"

namespace oarbank {

// In the order of a sandbox-run: the supervisor's setup, the launcher's own steps (all that
// sandbox-exec does), then the supervisor's phases after the spawn.
enum class LaunchStep : std::uint8_t {
  // sandbox-run's supervisor, before the launcher starts.
  RunState,     // run-state: the run record under the state directory, protected paths
  ModuleUser,   // module-user: the module id's own uid and gid, leased (issue 12)
  Cgroup,       // cgroup: the module's cgroup v2 leaf and its limits
  Container,    // container: what keeps the module in its container (leaf or process group)
  Directories,  // directories: the policy's writable directories, made and checked
  Network,      // network: the module's network namespace (egress; every module as root)
  Ipc,          // ipc: the module's own IPC namespace (root sandbox-run)
  Proxy,        // proxy: the module's egress proxy and its listener
  Terminal,     // terminal: the module's pty, when run from a terminal
  Spawn,        // spawn: clone3 of the launcher into the leaf
  Mounts,       // mounts: in the child, the module's own mount namespace (issue 12)
  // The launcher (sandbox-exec, or sandbox-run's child): launch() walks these.
  Descriptors,  // descriptors: 0, 1 and 2 open; every other descriptor closed at exec
  Identity,     // identity: the module user, the access check of the writable paths, chdir
  NoNewPrivs,   // no_new_privs: PR_SET_NO_NEW_PRIVS
  Landlock,     // landlock: landlock_restrict_self of the prepared ruleset
  Seccomp,      // seccomp: the plan's BPF filter
  Exec,         // exec: execve of the module
  // sandbox-run's supervisor, after the spawn.
  AwaitExec,  // await-exec: the status channel, until the module's exec closes it
  Verify,     // verify: /proc/<pid>/status after the exec
  Wait,       // wait: the module runs; signals, --timeout
  Teardown,   // teardown: the container killed and removed, the directories, the record
};

enum class StepRunner : std::uint8_t { Launcher, Supervisor };

struct StepInfo {
  LaunchStep step;
  std::string_view name;  // the word in "step NAME failed" and on the status channel
  StepRunner runner;
  bool irreversible;             // the process cannot go back: after it, no throwing
  std::string_view description;  // one line, for --explain
};

inline constexpr std::array<StepInfo, 21> kLaunchSteps{{
    {LaunchStep::RunState, "run-state", StepRunner::Supervisor, false,
     "claim the module id in the run state directory; the policy must not reach it"},
    {LaunchStep::ModuleUser, "module-user", StepRunner::Supervisor, false,
     "lease the module id its own uid and gid from the node's module_users range (root)"},
    {LaunchStep::Cgroup, "cgroup", StepRunner::Supervisor, false,
     "create the module's cgroup v2 leaf with the policy's and the node's limits"},
    {LaunchStep::Container, "container", StepRunner::Supervisor, false,
     "the module's container: its leaf, or its process group where there is none"},
    {LaunchStep::Directories, "directories", StepRunner::Supervisor, false,
     "create the writable directories and refuse one another user could reach"},
    {LaunchStep::Network, "network", StepRunner::Supervisor, false,
     "the module's network namespace: loopback only, and an egress module's proxy listener"},
    {LaunchStep::Ipc, "ipc", StepRunner::Supervisor, false,
     "the module's own IPC namespace (SysV IPC, POSIX message queues), entered by its first "
     "process"},
    {LaunchStep::Proxy, "proxy", StepRunner::Supervisor, false,
     "start the module's egress proxy on its listener"},
    {LaunchStep::Terminal, "terminal", StepRunner::Supervisor, false,
     "give the module a pty of its own when run from a terminal"},
    {LaunchStep::Spawn, "spawn", StepRunner::Supervisor, false,
     "clone3 the launcher into the leaf, in a process group of its own"},
    {LaunchStep::Mounts, "mounts", StepRunner::Supervisor, false,
     "as root: the module's own mount namespace: /dev/shm, /proc (hidepid), devpts, noexec "
     "writable directories"},
    {LaunchStep::Descriptors, "descriptors", StepRunner::Launcher, false,
     "keep 0, 1, 2 and --keep-fd open, mark every other descriptor close-on-exec"},
    {LaunchStep::Identity, "identity", StepRunner::Launcher, true,
     "become the module user (root only), check it can use its writable paths, chdir"},
    {LaunchStep::NoNewPrivs, "no_new_privs", StepRunner::Launcher, true,
     "prctl(PR_SET_NO_NEW_PRIVS): no exec gains privileges"},
    {LaunchStep::Landlock, "landlock", StepRunner::Launcher, true,
     "landlock_restrict_self with the prepared ruleset"},
    {LaunchStep::Seccomp, "seccomp", StepRunner::Launcher, true,
     "load the plan's seccomp filter (compiled at build time)"},
    {LaunchStep::Exec, "exec", StepRunner::Launcher, true, "execve the module"},
    {LaunchStep::AwaitExec, "await-exec", StepRunner::Supervisor, false,
     "read the launcher's status channel until the module's exec closes it"},
    {LaunchStep::Verify, "verify", StepRunner::Supervisor, false,
     "check /proc/<pid>/status after the exec: identity, no_new_privs, seccomp"},
    {LaunchStep::Wait, "wait", StepRunner::Supervisor, false,
     "wait for the module, serving signals and --timeout"},
    {LaunchStep::Teardown, "teardown", StepRunner::Supervisor, false,
     "kill what is left in the container and remove what the run made"},
}};

constexpr const StepInfo& step_info(LaunchStep step) {
  return kLaunchSteps[static_cast<std::size_t>(step)];
}
constexpr std::string_view step_name(LaunchStep step) { return step_info(step).name; }

// The launcher's steps, in order: the contiguous run of Launcher entries.
constexpr std::span<const StepInfo> launcher_steps() {
  return std::span<const StepInfo>(kLaunchSteps)
      .subspan(static_cast<std::size_t>(LaunchStep::Descriptors),
               static_cast<std::size_t>(LaunchStep::Exec) -
                   static_cast<std::size_t>(LaunchStep::Descriptors) + 1);
}

// The step of that name; nullopt for any other word.
std::optional<LaunchStep> step_from_name(std::string_view name);

// "step NAME failed: WHAT", the start of every step's one-line error.
std::string step_failed_message(LaunchStep step, std::string_view what);

// The Error of a step that failed before the irreversible ones: its message is
// step_failed_message(step, what), then ": " and errno_text(err) where err is not 0.
Error step_error(LaunchStep step, std::string_view what, int err = 0,
                 ErrorKind kind = ErrorKind::StepFailed);

}  // namespace oarbank
