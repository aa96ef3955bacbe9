// The cgroup mechanism's pure half (plan/mechanism.hpp): its rows of the capability table
// (container.cgroup, limit.cpu, limit.memory, limit.pids) with their evaluators, and what a
// module's cgroup leaf is given: cpu.max and memory.max from the policy's reservations when the
// node turns them into hard limits, pids.max from the node. It adds nothing to the Landlock
// plan, the filter or --explain. The apply half: supervise/cgroup_leaf.* (the leaf and its
// limits, sandbox-run's step cgroup) and supervise/spawn.* (clone3 into it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "plan/capabilities.hpp"
#include "plan/mechanism.hpp"
#include "probe/kernel_features.hpp"

namespace oarbank {

struct LeafLimits {
  std::optional<std::string> cpu_max;       // "QUOTA PERIOD" in microseconds
  std::optional<std::uint64_t> memory_max;  // bytes; memory.swap.max is set to 0 with it
  std::optional<std::uint64_t> pids_max;
  // Controllers the limits above need; with hard_limits every one is required (70 without).
  std::vector<std::string> controllers;
  // Enabled where the parent has them, and left alone where not (never a refusal). "cpu":
  // the leaf a task group of its own. Attack review (session 15): in the root task group, with
  // scheduler autogroups on (Debian's default), each setsid() of a module made a group weighed
  // as a whole login session, whatever its nice (one module at nice 19 took 419 ms of 800 from
  // a node loop at nice 0); a task group of its own weighs one share, however many sessions.
  std::vector<std::string> best_effort_controllers;
  bool required = false;  // the node's hard_limits: a missing controller refuses the run
};

inline constexpr std::uint64_t kCpuPeriodMicros = 100000;

LeafLimits make_leaf_limits(const Policy& policy, const NodeConfig& config);

// The container.cgroup row's verdict (a delegated cgroup v2 leaf parent with cgroup.kill or
// cgroup.freeze), under `row`'s name. Also what world.process-groups needs (capabilities.cpp).
CapabilityVerdict container_verdict(CapabilityRow row, const KernelFeatures& features);

extern const Mechanism kCgroupMechanism;

}  // namespace oarbank
