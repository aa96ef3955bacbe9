// What a module's cgroup leaf is given (pure): cpu.max and memory.max from the policy's
// reservations when the node turns them into hard limits, pids.max from the node.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/node_config.hpp"
#include "oarbank/policy.hpp"

namespace oarbank {

struct LeafLimits {
  std::optional<std::string> cpu_max;       // "QUOTA PERIOD" in microseconds
  std::optional<std::uint64_t> memory_max;  // bytes; memory.swap.max is set to 0 with it
  std::optional<std::uint64_t> pids_max;
  // Controllers the limits above need; with hard_limits every one is required (70 without).
  std::vector<std::string> controllers;
  bool required = false;  // the node's hard_limits: a missing controller refuses the run
};

inline constexpr std::uint64_t kCpuPeriodMicros = 100000;

LeafLimits make_leaf_limits(const Policy& policy, const NodeConfig& config);

}  // namespace oarbank
