// What a launch makes before the launcher's steps (issue 11), one entry per mechanism that
// makes something there, listed once (apply/before_launch.cpp): a bare sandbox-exec walks the
// list in its own process before launch(), so that its command (cli/cmd_sandbox_exec.cpp)
// names no mechanism. Today one entry: the network's (apply/egress_relay.cpp: an egress
// module's own namespace and the relay to the proxy, as root). sandbox-run makes the same
// things in its module run, a step at a time with their releases (supervise/module_run.cpp:
// make_network, one entry of its setup), from the same facts (plan/mechanism_network.hpp).
#pragma once

#include <span>

#include "plan/launch_steps.hpp"

namespace oarbank {

struct PreparedExec;  // apply/prepared_exec.hpp

struct BeforeLaunch {
  LaunchStep step;  // the step it belongs to: its failures say "step NAME failed"
  // A bare sandbox-exec: runs in the launcher's own process, single-threaded, after the plan
  // and before launch() (so before the identity drop); makes nothing where the prepared launch
  // does not need it. Throws Error (step_error).
  void (*bare_exec)(const PreparedExec& prepared);
};

// Every entry, in the order they run.
std::span<const BeforeLaunch> before_launch_setups();

// sandbox-exec: runs every entry's bare_exec on the prepared launch, in order.
void make_before_launch(const PreparedExec& prepared);

}  // namespace oarbank
