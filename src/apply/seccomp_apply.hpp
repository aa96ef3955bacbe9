#pragma once

#include "plan/seccomp_rules.hpp"

namespace oarbank {

// Loads the variant's program, compiled at build time. Needs no_new_privs. Returns 0 or errno.
int load_seccomp_filter(const seccomp::FilterVariant& variant);

}  // namespace oarbank
