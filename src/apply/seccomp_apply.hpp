#pragma once

#include "plan/seccomp_rules.hpp"

namespace oarbank {

// Loads the variant's program, compiled at build time. Needs no_new_privs. Returns 0 or errno.
// With listener_channel_fd >= 0 (sandbox-run's status channel, a unix socket): the variant's
// notifying program, loaded with a listener that is sent over that channel (docs/denials.md);
// a failure to send it is a failure of the step, as a failure to load is.
int load_seccomp_filter(const seccomp::FilterVariant& variant, int listener_channel_fd = -1);

}  // namespace oarbank
