#include "plan/capabilities.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "plan/landlock_rights.hpp"

namespace oarbank {

std::string_view to_string(LandlockState state) {
  switch (state) {
    case LandlockState::NotBuilt:
      return "missing";
    case LandlockState::Disabled:
      return "disabled";
    case LandlockState::Present:
      return "present";
  }
  return "?";
}

std::string_view row_key(CapabilityRow row) {
  switch (row) {
    case CapabilityRow::Filesystem:
      return "filesystem";
    case CapabilityRow::EgressAllowlist:
      return "net.egress-allowlist";
    case CapabilityRow::Ipc:
      return "ipc";
    case CapabilityRow::EgressAny:
      return "net.egress-any";
    case CapabilityRow::StatHiding:
      return "stat-hiding";
  }
  return "?";
}

std::string_view row_title(CapabilityRow row) {
  switch (row) {
    case CapabilityRow::Filesystem:
      return "filesystem, net.none, exec_writable deny, GPU";
    case CapabilityRow::EgressAllowlist:
      return "net.egress-allowlist, no loopback, no link-local";
    case CapabilityRow::Ipc:
      return "IPC";
    case CapabilityRow::EgressAny:
      return "net.egress-any";
    case CapabilityRow::StatHiding:
      return "hiding which files exist";
  }
  return "?";
}

std::string_view to_string(CapabilityStatus status) {
  switch (status) {
    case CapabilityStatus::Enforced:
      return "enforced";
    case CapabilityStatus::Unavailable:
      return "unavailable";
    case CapabilityStatus::NotPromised:
      return "not promised";
  }
  return "?";
}

int effective_landlock_abi(const KernelFeatures& features, const NodeConfig& config) {
  if (features.landlock != LandlockState::Present) return 0;
  int abi = std::min(features.landlock_abi, landlock::kNewestKnownAbi);
  if (config.landlock_abi_max) abi = std::min(abi, *config.landlock_abi_max);
  return abi;
}

namespace {

// The row's Landlock floor; 0 for rows that no ABI makes enforced.
int min_abi(CapabilityRow row) {
  switch (row) {
    case CapabilityRow::Filesystem:
      return landlock::kFilesystemFloorAbi;
    case CapabilityRow::EgressAllowlist:
      return 4;
    case CapabilityRow::Ipc:
      return 6;
    case CapabilityRow::EgressAny:
    case CapabilityRow::StatHiding:
      return 0;
  }
  return 0;
}

std::string landlock_shortfall(int needed, const KernelFeatures& features, const NodeConfig& config) {
  std::string need = fmt::format("needs Landlock ABI {} ({})", needed, landlock::linux_release_for_abi(needed));
  if (features.landlock == LandlockState::NotBuilt) return need + "; this kernel has no Landlock";
  if (features.landlock == LandlockState::Disabled) {
    return need + "; Landlock is built into this kernel but disabled at boot (lsm=)";
  }
  if (config.landlock_abi_max && *config.landlock_abi_max < features.landlock_abi) {
    return fmt::format("{}; this node's configuration caps Landlock at ABI {} (the kernel has ABI {})",
                       need, *config.landlock_abi_max, features.landlock_abi);
  }
  return fmt::format("{}; this kernel has ABI {}", need, features.landlock_abi);
}

}  // namespace

CapabilityVerdict evaluate_capability(CapabilityRow row, const KernelFeatures& features,
                                      const NodeConfig& config) {
  switch (row) {
    case CapabilityRow::EgressAny:
      return {row, CapabilityStatus::Unavailable,
              "Landlock filters ports, not addresses, so loopback and link-local cannot be refused"};
    case CapabilityRow::StatHiding:
      return {row, CapabilityStatus::NotPromised, "Landlock does not restrict stat"};
    default:
      break;
  }
  const int needed = min_abi(row);
  const int abi = effective_landlock_abi(features, config);
  if (abi < needed) return {row, CapabilityStatus::Unavailable, landlock_shortfall(needed, features, config)};
  if (!features.seccomp_filter) {
    return {row, CapabilityStatus::Unavailable, "needs seccomp filters; this kernel has none"};
  }
  return {row, CapabilityStatus::Enforced,
          fmt::format("Landlock ABI {} (needs {}) and seccomp filters", abi, needed)};
}

std::vector<CapabilityVerdict> evaluate_capabilities(const KernelFeatures& features,
                                                     const NodeConfig& config) {
  std::vector<CapabilityVerdict> out;
  for (auto row : {CapabilityRow::Filesystem, CapabilityRow::EgressAllowlist, CapabilityRow::Ipc,
                   CapabilityRow::EgressAny, CapabilityRow::StatHiding}) {
    out.push_back(evaluate_capability(row, features, config));
  }
  return out;
}

std::vector<CapabilityRow> rows_needed_by(const Policy& policy) {
  std::vector<CapabilityRow> rows{CapabilityRow::Filesystem};
  if (policy.net == NetMode::EgressAllowlist) rows.push_back(CapabilityRow::EgressAllowlist);
  if (policy.net == NetMode::EgressAny) rows.push_back(CapabilityRow::EgressAny);
  if (policy.ipc_isolation == IpcIsolation::Required) rows.push_back(CapabilityRow::Ipc);
  return rows;
}

}  // namespace oarbank
