// The module's identity: never uid 0, no capabilities.
#pragma once

#include <string>

#include "plan/plan.hpp"
#include "sys/error.hpp"  // StepError

namespace oarbank {

// As root: no supplementary groups, the module's gid and uid (real, effective and saved), and
// an empty bounding set, dropped while CAP_SETPCAP is still held. Then, for everyone: empty
// effective, permitted, inheritable and ambient sets. Returns false and fills `error`.
// `real_uid_last` (sandbox-run as root, which sends the seccomp listener and restricts itself
// with Landlock after this step): the real uid stays 0 until finish_identity(); effective and
// saved become the module's here, and every capability set is emptied all the same. The listener
// goes to the supervisor with SCM_RIGHTS, which the kernel refuses (ETOOMANYREFS, Linux 4.5) while
// the sender's user (its real uid's) has more descriptors in flight than the sender's
// RLIMIT_NOFILE: sent as the module user, another module of the shared module user (or any process
// of that user) holding as many in flight as its own limit allowed kept every later run of that
// user from starting (session 19's attack review). Sent with the real uid root's, it counts against
// root's, which no module is. And Landlock's audit log names the domain restrict_self makes by the
// real uid of its maker: root's, which no process of a module has, so a domain a module's process
// made is never taken for the run's (session 20's attack review; plan/landlock_denial.hpp).
bool apply_identity(const IdentityPlan& identity, StepError& error, bool real_uid_last = false);
// The real uid the module's too, after the send; fails closed where any uid 0 is left.
bool finish_identity(const IdentityPlan& identity, StepError& error);

}  // namespace oarbank
