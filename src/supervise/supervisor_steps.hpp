// sandbox-run's own steps, in the order a run takes them: what the module run makes (each
// released in reverse order, release_stack.hpp) and the supervisor's phases. Each name is the
// word in "step NAME failed: ..." messages. (Issue 11: these join the launcher's steps in one
// typed list, src/plan/launch_steps.hpp, once that exists; the names stay.)
#pragma once

#include <string_view>

namespace oarbank {

enum class SupervisorStep {
  RunState,     // the id's record in the run state directory, claimed and locked
  Cgroup,       // the module's cgroup v2 leaf, with its limits
  Container,    // the container as a whole: the leaf, else the process group
  Directories,  // the policy's missing work, temp and data directories, created
  Network,      // the egress module's network namespace, or its own proxy port
  Proxy,        // the egress proxy serving the module
  Terminal,     // on a terminal: the module's pty, and the front split off
  Spawn,        // the launcher's child, in its group and leaf
  AwaitExec,    // the status channel, until the module's exec or the launcher's failure
  Verify,       // /proc/<pid>/status after the exec
  Wait,         // the module runs: signals, --timeout, stops
  Teardown,     // the container killed, its leaf removed, every child reaped
};

constexpr std::string_view step_name(SupervisorStep step) {
  switch (step) {
    case SupervisorStep::RunState:
      return "run-state";
    case SupervisorStep::Cgroup:
      return "cgroup";
    case SupervisorStep::Container:
      return "container";
    case SupervisorStep::Directories:
      return "directories";
    case SupervisorStep::Network:
      return "network";
    case SupervisorStep::Proxy:
      return "proxy";
    case SupervisorStep::Terminal:
      return "terminal";
    case SupervisorStep::Spawn:
      return "spawn";
    case SupervisorStep::AwaitExec:
      return "await-exec";
    case SupervisorStep::Verify:
      return "verify";
    case SupervisorStep::Wait:
      return "wait";
    case SupervisorStep::Teardown:
      return "teardown";
  }
  return "?";
}

}  // namespace oarbank
