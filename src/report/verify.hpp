// sandbox-report --verify: proves each enforced row on this node by launching small probes
// under the real launcher (this same binary's hidden `sandbox-probe` sub-command is the
// module) that try the forbidden thing, next to a control probe that must work.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/report.hpp"

namespace oarbank {

std::vector<RowVerification> verify_report(const Report& report, const NodeConfig& config);

}  // namespace oarbank
