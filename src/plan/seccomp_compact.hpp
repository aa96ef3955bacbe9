// The rule table written for libseccomp in fewer rules that refuse exactly the same calls.
// "Not in a set" is one rule per refused value plus one "greater than" rule
// (seccomp_rules.cpp, refuse_unless_in: libseccomp cannot compare one argument twice in a
// rule), and libseccomp gives each value its own comparison: socketpair's 45 families were a
// 45-instruction chain. Here the refused values of such a group are written as intervals, each
// split into aligned power-of-two blocks (one masked comparison each) with the top interval as
// one "greater than": {0} and (1, max] for "socketpair only for AF_UNIX". The kernel converts
// and JITs every instruction of a filter at each launch (docs/performance.md, "seccomp load").
// Build time only, like seccomp_compile.hpp; --explain and the denial reasons keep the table's
// own rules.
#pragma once

#include <vector>

#include "plan/seccomp_rules.hpp"

namespace oarbank::seccomp {

// Rules with the same syscall, errno and checks but the last, whose last checks compare one
// argument (under the same low-bits mask, or the whole 64 bits) with values or a "greater
// than" threshold, are replaced by the blocks of their union where that takes fewer rules.
// Every other rule is kept as it is, in its place.
std::vector<Rule> compact_rules(const std::vector<Rule>& rules);

}  // namespace oarbank::seccomp
