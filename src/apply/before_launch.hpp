// What a launch makes before the launcher's steps (issue 11), one entry per mechanism that
// makes something there, listed once (apply/before_launch.cpp) and walked by both launch
// modes: a bare sandbox-exec in its own process before launch(), so that its command
// (cli/cmd_sandbox_exec.cpp) names no mechanism; sandbox-run's module run in the supervisor
// after its own setup steps, each thing made pushed with its release
// (supervise/module_run.cpp). So a new mechanism that makes something before the launch is
// its apply pair and one line in the list. Today one entry, the network's
// (apply/egress_relay.cpp): for a bare sandbox-exec an egress module's own namespace and the
// relay to the proxy, as root; sandbox-run makes the module's namespace in a step of its own
// (make_network: the child joins it, the proxy listens in it), so that entry has no
// module_run part.
#pragma once

#include <functional>
#include <span>

#include "plan/launch_steps.hpp"

namespace oarbank {

struct PreparedExec;  // apply/prepared_exec.hpp

// What sandbox-run's module run made before its entries run, that an entry may work on.
struct ModuleRunSetup {
  int netns_fd = -1;  // the module's own network namespace (make_network), or -1: none
};

struct BeforeLaunch {
  LaunchStep step;  // the step it belongs to: its failures say "step NAME failed"
  // A bare sandbox-exec: runs in the launcher's own process, single-threaded, after the plan
  // and before launch() (so before the identity drop); makes nothing where the prepared launch
  // does not need it. Throws Error (step_error).
  void (*bare_exec)(const PreparedExec& prepared);
  // sandbox-run: runs in the supervisor once the run's network, proxy and terminal are made,
  // before the spawn; returns the release of what it made (empty: nothing made), which the
  // run pushes, named by `step`. Throws Error. nullptr: the module run makes it itself.
  std::function<void()> (*module_run)(const PreparedExec& prepared, const ModuleRunSetup& setup);
};

// Every entry, in the order they run.
std::span<const BeforeLaunch> before_launch_setups();

// sandbox-exec: runs every entry's bare_exec on the prepared launch, in order.
void make_before_launch(const PreparedExec& prepared);

}  // namespace oarbank
