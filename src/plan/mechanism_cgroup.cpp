#include "plan/mechanism_cgroup.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>

namespace oarbank {

LeafLimits make_leaf_limits(const Policy& policy, const NodeConfig& config) {
  LeafLimits limits;
  limits.required = config.hard_limits;
  if (config.hard_limits && policy.reservations.cpu) {
    // cpu.max's quota has a floor of 1 ms per period in the kernel (cpu_max_write: EINVAL).
    auto quota = static_cast<std::uint64_t>(
        std::llround(*policy.reservations.cpu * static_cast<double>(kCpuPeriodMicros)));
    if (quota < 1000) quota = 1000;
    limits.cpu_max = std::to_string(quota) + " " + std::to_string(kCpuPeriodMicros);
    limits.controllers.emplace_back("cpu");
  }
  if (config.hard_limits && policy.reservations.memory_bytes) {
    limits.memory_max = *policy.reservations.memory_bytes;
    limits.controllers.emplace_back("memory");
  }
  if (config.pids_max) {
    limits.pids_max = *config.pids_max;
    limits.controllers.emplace_back("pids");
  }
  if (std::find(limits.controllers.begin(), limits.controllers.end(), "cpu") ==
      limits.controllers.end()) {
    limits.best_effort_controllers.emplace_back("cpu");
  }
  return limits;
}

CapabilityVerdict container_verdict(CapabilityRow row, const KernelFeatures& features) {
  const auto& cg = features.cgroup;
  if (!cg.probed) return {row, CapabilityStatus::Unavailable, "cgroups were not probed"};
  if (!cg.mounted)
    return {row, CapabilityStatus::Unavailable,
            "no cgroup2 file system is mounted: process group only"};
  if (!cg.parent_writable) {
    return {row, CapabilityStatus::Unavailable,
            fmt::format("{} is not delegated to the agent (not writable): process group only",
                        cg.parent)};
  }
  if (!cg.kill_file && !cg.freeze_file) {
    return {row, CapabilityStatus::Unavailable,
            "this kernel's cgroup2 has neither cgroup.kill nor cgroup.freeze"};
  }
  return {row, CapabilityStatus::Enforced,
          fmt::format("leaves under {}{}", cg.parent,
                      cg.kill_file ? "" : " (no cgroup.kill: freeze, kill each, thaw)")};
}

namespace {

bool has_controller(const CgroupFacts& cgroup, std::string_view name) {
  return std::find(cgroup.controllers.begin(), cgroup.controllers.end(), name) !=
         cgroup.controllers.end();
}

CapabilityVerdict container_row(const CapabilityEntry& entry, const KernelFeatures& features,
                                const NodeConfig&) {
  return container_verdict(entry.row, features);
}

CapabilityVerdict limit_row(const CapabilityEntry& entry, const KernelFeatures& features,
                            const NodeConfig&) {
  const CapabilityRow row = entry.row;
  const std::string_view controller = entry.controller;
  auto container = container_verdict(CapabilityRow::CgroupContainer, features);
  if (container.status != CapabilityStatus::Enforced) {
    return {row, CapabilityStatus::Unavailable, "no cgroup v2 container: " + container.reason};
  }
  if (!has_controller(features.cgroup, controller)) {
    return {
        row, CapabilityStatus::Unavailable,
        fmt::format("the {} controller is not available in {} (cgroup.controllers); on a hybrid "
                    "layout it is bound to cgroup v1",
                    controller, features.cgroup.parent)};
  }
  return {row, CapabilityStatus::Enforced,
          fmt::format("the {} controller is available", controller)};
}

using landlock::Abi;
using Fact = CapabilityFact;
using Row = CapabilityRow;

// plan_rank: see capabilities.cpp's kCoreRows.
constexpr CapabilityEntry kCgroupRows[] = {
    {Row::CgroupContainer, "container.cgroup",
     "process container: cgroup v2 leaf (else process group only)", Abi::Unsupported,
     Fact::CgroupContainer, "", container_row, nullptr, 0, "", kEnforcedOrUnavailable,
     "cgroup2 mounted, the leaves' parent writable (delegated), `cgroup.kill` or `cgroup.freeze`",
     ""},
    {Row::LimitCpu, "limit.cpu", "hard limit: cpu.max", Abi::Unsupported, Fact::CgroupController,
     "cpu", limit_row,
     [](const Policy& p, const NodeConfig& c) { return c.hard_limits && p.reservations.cpu; }, 6,
     "", kEnforcedOrUnavailable,
     "the container row, and the `cpu` controller in the parent's `cgroup.controllers`",
     "it reserves cpu and the node's configuration sets `hard_limits`"},
    {Row::LimitMemory, "limit.memory", "hard limit: memory.max", Abi::Unsupported,
     Fact::CgroupController, "memory", limit_row,
     [](const Policy& p, const NodeConfig& c) {
       return c.hard_limits && p.reservations.memory_bytes;
     },
     7, "", kEnforcedOrUnavailable,
     "the container row, and the `memory` controller in the parent's `cgroup.controllers`",
     "it reserves memory and the node's configuration sets `hard_limits`"},
    // pids.max comes from the node, not the policy: with hard_limits it is required too.
    {Row::LimitPids, "limit.pids", "hard limit: pids.max", Abi::Unsupported, Fact::CgroupController,
     "pids", limit_row,
     [](const Policy&, const NodeConfig& c) { return c.hard_limits && c.pids_max; }, 8, "",
     kEnforcedOrUnavailable,
     "the container row, and the `pids` controller in the parent's `cgroup.controllers`",
     "the node's configuration sets `hard_limits` and a `pids_max` (whatever the policy)"},
};

}  // namespace

constinit const Mechanism kCgroupMechanism{
    "cgroup", kCgroupRows, nullptr, nullptr, nullptr, nullptr,
};

}  // namespace oarbank
