// What sandbox-exec does before its first irreversible step, as one value: the node's
// configuration, the policy, the probe, the plan and the prepared launch. sandbox-exec runs
// launch() on it in its own process; sandbox-run prepares it in the parent and runs launch()
// in the child it starts inside the module's container (one exec of the agent, not two).
#pragma once

#include <memory>

#include "apply/launch.hpp"
#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "plan/plan.hpp"
#include "probe/kernel_features.hpp"
#include "probe/path_facts.hpp"
#include "probe/probe.hpp"

namespace oarbank {

struct PreparedExec {
  NodeConfig config;
  Policy policy;
  KernelFeatures features;
  OpenedPaths paths;
  Plan plan;
  PreparedLaunch launch;  // points into `plan`: this value never moves (held by unique_ptr)
};

// The module's command and what the caller passes it (--setenv NAME=VALUE, --keep-fd N),
// checked: throws Error(Usage) naming the option.
LaunchRequest make_launch_request(const std::vector<std::string>& argv,
                                  const std::vector<std::string>& setenv,
                                  const std::vector<int>& keep_fds);

// What a launch of this policy must probe: only what its rows depend on, so that the launch
// of a module that is not an egress module does not pay for the network namespace probe.
ProbeScope launch_probe_scope(const Policy& policy, const NodeConfig& config);

// Throws what run_guarded maps: PolicyError (64), ConfigError (78), Error (64/70).
// `explain_only`: stop after the plan (no ruleset is built).
std::unique_ptr<PreparedExec> prepare_exec(const LaunchRequest& request, const NodeConfig& config,
                                           const Policy& policy, bool explain_only = false);
// The same on features the caller probed already (launch_probe_scope).
std::unique_ptr<PreparedExec> prepare_exec(const LaunchRequest& request, const NodeConfig& config,
                                           const Policy& policy, KernelFeatures features,
                                           bool explain_only = false);

}  // namespace oarbank
