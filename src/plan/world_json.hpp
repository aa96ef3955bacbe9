// Issue 12's review: --explain's "world" section, what the module's world is (its user, its
// mounts, its IPC and network namespaces, and what the filter allows because of them), from
// the plan alone. Pure. sandbox-exec's plan shows the node's world; sandbox-run's shows what
// the run makes (supervise/run_explain.hpp).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "plan/plan.hpp"

namespace oarbank {

nlohmann::json explain_world(const Plan& plan, const Policy& policy);

}  // namespace oarbank
