// The module's identity: never uid 0, no capabilities.
#pragma once

#include <string>

#include "plan/plan.hpp"
#include "sys/error.hpp"  // StepError

namespace oarbank {

// As root: no supplementary groups, the module's gid and uid (real, effective and saved), and
// an empty bounding set, dropped while CAP_SETPCAP is still held. Then, for everyone: empty
// effective, permitted, inheritable and ambient sets. Returns false and fills `error`.
bool apply_identity(const IdentityPlan& identity, StepError& error);

}  // namespace oarbank
