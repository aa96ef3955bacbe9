// sandbox-run --explain (issue 12's review): the plan the run would apply, its world included
// (plan/module_world.hpp decides it as the run does): the filter's variant, the mounts and
// their Landlock grants, and the identity the run takes, a lease of the id's when it has one
// (read from the registry, never made here). Nothing is made: no record, leaf, lease,
// directory or namespace.
#pragma once

#include <optional>
#include <string>

#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "plan/plan.hpp"

namespace oarbank {

// The --explain document (indented, no newline). `id`: --id (none: a generated id, which
// leases nothing). Throws as the run's refusals before the launch do (70 where the node
// cannot make the mounts it requires).
std::string explain_module_run(LaunchRequest request, NodeConfig config, const Policy& policy,
                               const std::optional<std::string>& id);

}  // namespace oarbank
