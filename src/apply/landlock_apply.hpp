// Landlock: building the ruleset (before any irreversible step) and restricting the process.
#pragma once

#include "plan/plan.hpp"
#include "probe/path_facts.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {

// Creates the ruleset and adds every rule of the plan. Nothing is enforced yet. Throws
// Error(StepFailed) naming the rule and the errno.
UniqueFd build_landlock_ruleset(const LandlockPlan& plan, const OpenedPaths& paths);

// landlock_restrict_self: from here on the ruleset binds this process and its children.
// Returns 0 or the errno.
// `flags`: landlock_restrict_self's (the logging flags of ABI 7), 0 below ABI 7.
int restrict_self(const UniqueFd& ruleset, unsigned flags = 0);

}  // namespace oarbank
