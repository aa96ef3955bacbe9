// The capability table: the rows of the page's "Enforcement report", and what each needs.
// The plan refuses a policy with the same evaluation the report prints, so the launcher and
// the report can never disagree about what this node enforces.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "probe/kernel_features.hpp"

namespace oarbank {

enum class CapabilityRow {
  Filesystem,       // "filesystem, net.none, exec_writable deny, GPU"
  EgressAllowlist,  // "net.egress-allowlist, no loopback, no link-local"
  Ipc,              // "IPC"
  EgressAny,        // "net.egress-any"
  StatHiding,       // "hiding which files exist"
};

enum class CapabilityStatus { Enforced, Unavailable, NotPromised };

struct CapabilityVerdict {
  CapabilityRow row;
  CapabilityStatus status;
  std::string reason;  // why, in words: "needs Landlock ABI 4 (Linux 6.7); this kernel has ABI 3"
};

std::string_view row_key(CapabilityRow row);    // "filesystem", "net.egress-allowlist", ...
std::string_view row_title(CapabilityRow row);  // the page's wording
std::string_view to_string(CapabilityStatus status);

// The Landlock ABI the launcher uses: the kernel's, capped by the node's configuration and
// by the newest ABI this build knows. 0 when Landlock is missing or disabled.
int effective_landlock_abi(const KernelFeatures& features, const NodeConfig& config);

// Every row, evaluated for this node.
std::vector<CapabilityVerdict> evaluate_capabilities(const KernelFeatures& features,
                                                     const NodeConfig& config);
CapabilityVerdict evaluate_capability(CapabilityRow row, const KernelFeatures& features,
                                      const NodeConfig& config);

// The rows a policy relies on: filesystem always, its net mode's row, IPC when
// ipc_isolation is required.
std::vector<CapabilityRow> rows_needed_by(const Policy& policy);

}  // namespace oarbank
