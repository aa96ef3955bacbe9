#pragma once

#include <nlohmann/json.hpp>

#include "plan/plan.hpp"

namespace oarbank {

// The --explain document: every Landlock rule with its rights, every seccomp rule with its
// reason, the identity, the environment and the report rows the policy relies on.
nlohmann::json explain_plan(const Plan& plan, const Policy& policy, const KernelFeatures& features,
                            const NodeConfig& config);

nlohmann::json kernel_features_to_json(const KernelFeatures& features, const NodeConfig& config);

}  // namespace oarbank
