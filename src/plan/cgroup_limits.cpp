#include "plan/cgroup_limits.hpp"

#include <cmath>

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
  return limits;
}

}  // namespace oarbank
