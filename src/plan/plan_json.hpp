#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "plan/plan.hpp"

namespace oarbank {

// The --explain document: every Landlock rule with its rights, every seccomp rule with its
// reason, the identity, the environment and the report rows the policy relies on.
nlohmann::json explain_plan(const Plan& plan, const Policy& policy, const KernelFeatures& features,
                            const NodeConfig& config);
// The same, as sandbox-exec --explain prints it (indented, no newline): its callers need not
// include the full JSON header.
std::string explain_plan_text(const Plan& plan, const Policy& policy,
                              const KernelFeatures& features, const NodeConfig& config);

nlohmann::json kernel_features_to_json(const KernelFeatures& features, const NodeConfig& config);

}  // namespace oarbank
