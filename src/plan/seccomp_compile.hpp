// Compiles a filter variant with libseccomp into a classic BPF program. Used at build time
// (tools/filtergen.cpp) and by tests; the launcher itself never links libseccomp.
#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

#include "plan/seccomp_rules.hpp"

namespace oarbank::seccomp {

// Throws std::runtime_error naming the rule libseccomp refused.
std::vector<sock_filter> compile(const FilterVariant& variant);

}  // namespace oarbank::seccomp
