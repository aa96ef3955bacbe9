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

namespace {

struct RowInfo {
  CapabilityRow row;
  std::string_view key;
  std::string_view title;
};

constexpr RowInfo kRows[] = {
    {CapabilityRow::Filesystem, "filesystem", "filesystem, net.none, exec_writable deny, GPU"},
    {CapabilityRow::EgressAllowlist, "net.egress-allowlist",
     "net.egress-allowlist, no loopback, no link-local"},
    {CapabilityRow::Ipc, "ipc", "IPC"},
    {CapabilityRow::EgressAny, "net.egress-any", "net.egress-any"},
    {CapabilityRow::StatHiding, "stat-hiding", "hiding which files exist"},
    {CapabilityRow::GpuDevices, "devices.gpu",
     "GPU device nodes (/dev/dri, /dev/nvidia*, /dev/kfd)"},
    {CapabilityRow::SetidFiles, "setid-files",
     "no setuid or setgid files (as systemd's RestrictSUIDSGID=)"},
    {CapabilityRow::CgroupContainer, "container.cgroup",
     "process container: cgroup v2 leaf (else process group only)"},
    {CapabilityRow::LimitCpu, "limit.cpu", "hard limit: cpu.max"},
    {CapabilityRow::LimitMemory, "limit.memory", "hard limit: memory.max"},
    {CapabilityRow::LimitPids, "limit.pids", "hard limit: pids.max"},
    {CapabilityRow::EgressNetns, "egress.netns",
     "egress confinement: network namespace (else port only)"},
    {CapabilityRow::ExecWritableScope, "known-limit.exec-writable",
     "exec_writable deny also stops interpreters, ld.so, mmap(PROT_EXEC) and memfd"},
    {CapabilityRow::MetadataCalls, "known-limit.metadata",
     "chmod, chown, utimes and xattrs governed outside the writable directories"},
    {CapabilityRow::BrokerSockets, "known-limit.broker-sockets",
     "the broker grant reaches the broker's socket alone"},
    {CapabilityRow::DenialsSyscalls, "denials.syscalls",
     "sandbox-run names the filter's refusals (seccomp)"},
    {CapabilityRow::DenialsFilesystem, "denials.filesystem",
     "sandbox-run names Landlock's file refusals (audit)"},
    {CapabilityRow::DenialsNetwork, "denials.network",
     "sandbox-run names Landlock's TCP refusals (audit)"},
};

const RowInfo& info(CapabilityRow row) {
  for (const auto& entry : kRows) {
    if (entry.row == row) return entry;
  }
  return kRows[0];
}

}  // namespace

std::string_view row_key(CapabilityRow row) { return info(row).key; }
std::string_view row_title(CapabilityRow row) { return info(row).title; }

const std::vector<CapabilityRow>& all_rows() {
  static const std::vector<CapabilityRow> rows = [] {
    std::vector<CapabilityRow> out;
    for (const auto& entry : kRows) out.push_back(entry.row);
    return out;
  }();
  return rows;
}

std::string_view to_string(CapabilityStatus status) {
  switch (status) {
    case CapabilityStatus::Enforced:
      return "enforced";
    case CapabilityStatus::Unavailable:
      return "unavailable";
    case CapabilityStatus::NotPromised:
      return "not promised";
    case CapabilityStatus::PortOnly:
      return "port only";
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

// The Landlock floor of the rows Landlock decides.
int min_abi(CapabilityRow row) {
  switch (row) {
    case CapabilityRow::EgressAllowlist:
      return 4;  // TCP port rules
    case CapabilityRow::Ipc:
      return 6;  // scopes: abstract unix sockets and signals
    default:
      return landlock::kFilesystemFloorAbi;  // truncate is governed from ABI 3
  }
}

std::string landlock_shortfall(int needed, const KernelFeatures& features,
                               const NodeConfig& config) {
  std::string need =
      fmt::format("needs Landlock ABI {} ({})", needed, landlock::linux_release_for_abi(needed));
  if (features.landlock == LandlockState::NotBuilt) return need + "; this kernel has no Landlock";
  if (features.landlock == LandlockState::Disabled) {
    return need + "; Landlock is built into this kernel but disabled at boot (lsm=)";
  }
  if (config.landlock_abi_max && *config.landlock_abi_max < features.landlock_abi) {
    return fmt::format(
        "{}; this node's configuration caps Landlock at ABI {} (the kernel has ABI {})", need,
        *config.landlock_abi_max, features.landlock_abi);
  }
  return fmt::format("{}; this kernel has ABI {}", need, features.landlock_abi);
}

}  // namespace

namespace {

bool has_controller(const CgroupFacts& cgroup, std::string_view name) {
  return std::find(cgroup.controllers.begin(), cgroup.controllers.end(), name) !=
         cgroup.controllers.end();
}

CapabilityVerdict landlock_row(CapabilityRow row, const KernelFeatures& features,
                               const NodeConfig& config) {
  const int needed = min_abi(row);
  const int abi = effective_landlock_abi(features, config);
  if (abi < needed)
    return {row, CapabilityStatus::Unavailable, landlock_shortfall(needed, features, config)};
  if (!features.seccomp_filter) {
    return {row, CapabilityStatus::Unavailable, "needs seccomp filters; this kernel has none"};
  }
  return {row, CapabilityStatus::Enforced,
          fmt::format("Landlock ABI {} (needs {}) and seccomp filters", abi, needed)};
}

CapabilityVerdict container_row(const KernelFeatures& features) {
  const auto& cg = features.cgroup;
  const CapabilityRow row = CapabilityRow::CgroupContainer;
  if (!cg.probed) return {row, CapabilityStatus::Unavailable, "cgroups were not probed"};
  if (!cg.mounted)
    return {row, CapabilityStatus::Unavailable,
            "no cgroup2 file system is mounted: process group only"};
  if (!cg.parent_writable) {
    return {row, CapabilityStatus::Unavailable,
            fmt::format("{} is not delegated to the agent (not writable): process group only",
                        cg.parent)};
  }
  if (!cg.kill_file && !cg.freeze_file) {
    return {row, CapabilityStatus::Unavailable,
            "this kernel's cgroup2 has neither cgroup.kill nor cgroup.freeze"};
  }
  return {row, CapabilityStatus::Enforced,
          fmt::format("leaves under {}{}", cg.parent,
                      cg.kill_file ? "" : " (no cgroup.kill: freeze, kill each, thaw)")};
}

CapabilityVerdict limit_row(CapabilityRow row, std::string_view controller,
                            const KernelFeatures& features) {
  auto container = container_row(features);
  if (container.status != CapabilityStatus::Enforced) {
    return {row, CapabilityStatus::Unavailable, "no cgroup v2 container: " + container.reason};
  }
  if (!has_controller(features.cgroup, controller)) {
    return {
        row, CapabilityStatus::Unavailable,
        fmt::format("the {} controller is not available in {} (cgroup.controllers); on a hybrid "
                    "layout it is bound to cgroup v1",
                    controller, features.cgroup.parent)};
  }
  return {row, CapabilityStatus::Enforced,
          fmt::format("the {} controller is available", controller)};
}

// Why the module cannot have a namespace of its own here ("" when it can).
std::string why_no_namespace(const KernelFeatures& features) {
  if (!features.network_namespaces_probed) return "network namespaces were not probed";
  if (!features.running_as_root) {
    return "the agent is not root, so it cannot give the module a network namespace of its own";
  }
  if (!features.network_namespaces) return "this node cannot create network namespaces";
  return "";
}

// net.egress-allowlist: Landlock's port rule (ABI 4) and seccomp, and what keeps the module to
// the proxy's address, per launch mode.
CapabilityVerdict egress_allowlist_row(const KernelFeatures& features, const NodeConfig& config) {
  const CapabilityRow row = CapabilityRow::EgressAllowlist;
  auto landlock = landlock_row(row, features, config);
  if (landlock.status != CapabilityStatus::Enforced) return landlock;
  switch (egress_confinement(features, config)) {
    case EgressConfinement::Namespace:
      return {row, CapabilityStatus::Enforced,
              landlock.reason +
                  "; each module gets a network namespace holding only loopback, the proxy "
                  "reachable inside it at proxy_listen (sandbox-run: the proxy's listener; "
                  "sandbox-exec: a relay to proxy_listen), so no other host is reachable"};
    case EgressConfinement::PortOnly:
      return {row, CapabilityStatus::PortOnly,
              "port only, accepted by this node's configuration (accept_port_only_egress): " +
                  why_no_namespace(features) +
                  "; a module can reach any host that listens on its proxy port. sandbox-run: "
                  "a proxy port of its own that accepts connections from the module's "
                  "processes alone; sandbox-exec: proxy_listen's port, shared: any local "
                  "process can connect there and be judged by that proxy's allowlist"};
    case EgressConfinement::Refused:
      break;
  }
  return {row, CapabilityStatus::Unavailable,
          why_no_namespace(features) +
              ", and this node's configuration does not accept port-only confinement "
              "(accept_port_only_egress is false; with it a module could reach any host that "
              "listens on the proxy's port)"};
}

// Issue 14: Landlock's refusals are read from the kernel's audit log (docs/denials.md).
CapabilityVerdict audit_denials_row(CapabilityRow row, const KernelFeatures& features,
                                    const NodeConfig& config) {
  const int abi = effective_landlock_abi(features, config);
  if (abi < 7) {
    return {row, CapabilityStatus::Unavailable,
            "needs Landlock ABI 7 (Linux 6.15) for audit records; this node uses ABI " +
                std::to_string(abi)};
  }
  if (config.denial_audit == "off") {
    return {row, CapabilityStatus::Unavailable, "the node's configuration says denial_audit: off"};
  }
  if (!features.running_as_root) {
    return {row, CapabilityStatus::Unavailable,
            "reading the audit log needs root (CAP_AUDIT_READ)"};
  }
  if (features.audit_enabled == 0 && config.denial_audit != "enable") {
    return {row, CapabilityStatus::Unavailable,
            "audit is disabled on this node (denial_audit: \"enable\" would turn it on)"};
  }
  return {row, CapabilityStatus::Enforced,
          std::string("Landlock's audit records (ABI 7), read by sandbox-run") +
              (features.audit_enabled == 0 ? "; audit is off and sandbox-run turns it on "
                                             "(denial_audit: \"enable\")"
                                           : "")};
}

}  // namespace

EgressConfinement egress_confinement(const KernelFeatures& features, const NodeConfig& config) {
  if (why_no_namespace(features).empty()) return EgressConfinement::Namespace;
  return config.accept_port_only_egress ? EgressConfinement::PortOnly : EgressConfinement::Refused;
}

bool row_is_met(CapabilityStatus status) {
  return status == CapabilityStatus::Enforced || status == CapabilityStatus::PortOnly;
}

CapabilityVerdict evaluate_capability(CapabilityRow row, const KernelFeatures& features,
                                      const NodeConfig& config) {
  switch (row) {
    case CapabilityRow::Filesystem:
    case CapabilityRow::Ipc:
      return landlock_row(row, features, config);
    case CapabilityRow::EgressAllowlist:
      return egress_allowlist_row(features, config);
    case CapabilityRow::EgressAny:
      return {
          row, CapabilityStatus::Unavailable,
          "Landlock filters ports, not addresses, so loopback and link-local cannot be refused"};
    case CapabilityRow::StatHiding:
      return {row, CapabilityStatus::NotPromised, "Landlock does not restrict stat"};
    case CapabilityRow::GpuDevices: {
      auto fs = landlock_row(CapabilityRow::Filesystem, features, config);
      if (fs.status != CapabilityStatus::Enforced) return {row, fs.status, fs.reason};
      if (features.gpu_device_nodes.empty()) {
        return {row, CapabilityStatus::Unavailable,
                "this node has no GPU device node (/dev/dri, /dev/nvidia*, /dev/kfd)"};
      }
      std::string nodes;
      for (const auto& node : features.gpu_device_nodes)
        nodes += (nodes.empty() ? "" : ", ") + node;
      return {row, CapabilityStatus::Enforced,
              effective_landlock_abi(features, config) >= 5
                  ? "device nodes " + nodes + "; device ioctls governed (Landlock ABI 5)"
                  : "device nodes " + nodes + "; device ioctls not governed below Landlock ABI 5"};
    }
    case CapabilityRow::SetidFiles:
      // The filter refuses setting the bits (docs/seccomp.md); it is loaded wherever the
      // launcher runs a module, so the row needs seccomp filters alone.
      if (!features.seccomp_filter) {
        return {row, CapabilityStatus::Unavailable, "needs seccomp filters; this kernel has none"};
      }
      return {row, CapabilityStatus::Enforced,
              "the seccomp filter refuses the setuid and setgid bits in chmod, fchmod, fchmodat, "
              "fchmodat2, open, openat, creat, mkdir, mkdirat, mknod and mknodat (openat2: "
              "ENOSYS)"};
    case CapabilityRow::CgroupContainer:
      return container_row(features);
    case CapabilityRow::LimitCpu:
      return limit_row(row, "cpu", features);
    case CapabilityRow::LimitMemory:
      return limit_row(row, "memory", features);
    case CapabilityRow::LimitPids:
      return limit_row(row, "pids", features);
    case CapabilityRow::EgressNetns: {
      // Made by sandbox-run (supervise/module_network.cpp) and by a bare sandbox-exec
      // (apply/egress_relay.cpp) when they run as root.
      const std::string why = why_no_namespace(features);
      if (why.empty()) {
        return {row, CapabilityStatus::Enforced,
                "sandbox-run and sandbox-exec give each egress-allowlist module a network "
                "namespace holding only loopback, the proxy reachable inside it"};
      }
      return {row, CapabilityStatus::Unavailable,
              why + (config.accept_port_only_egress
                         ? "; egress modules run confined by port alone "
                           "(accept_port_only_egress)"
                         : "; egress modules are refused (accept_port_only_egress is false)")};
    }
    case CapabilityRow::ExecWritableScope:
      return {
          row, CapabilityStatus::NotPromised,
          "exec_writable deny refuses execve of written files; interpreters, the dynamic loader, "
          "mmap(PROT_EXEC) and memfd still run code the module wrote"};
    case CapabilityRow::MetadataCalls:
      // Per launch mode: whose files a module can change the metadata of.
      return {row, CapabilityStatus::NotPromised,
              "Landlock does not govern chmod, chown, utimes or xattrs. Started as root, every "
              "module runs as the same module user: a module can change the mode, times and "
              "xattrs of another module's files, and of none of its operator's. Started "
              "unprivileged, a module runs as its operator: it can change those of any file of "
              "the operator's it can name (not read or write them outside its policy); "
              "sandbox-run keeps its own state out of reach (policies naming it or the node "
              "configuration refused, run records trusted only as the operator wrote them, a "
              "state directory made writable repaired)"};
    case CapabilityRow::BrokerSockets:
      return {row, CapabilityStatus::NotPromised,
              "Landlock does not govern connect to pathname unix sockets: with the broker grant a "
              "module reaches any socket its user may write to"};
    case CapabilityRow::DenialsSyscalls:
      if (!features.seccomp_filter || !features.seccomp_user_notif) {
        return {row, CapabilityStatus::Unavailable,
                "needs seccomp user notification (Linux 5.0); this kernel has none: refusals "
                "stay refusals, unnamed"};
      }
      return {row, CapabilityStatus::Enforced,
              "sandbox-run's supervisor answers the filter's refusals (SECCOMP_RET_USER_NOTIF) "
              "and names each with the policy change that would allow it"};
    case CapabilityRow::DenialsFilesystem:
    case CapabilityRow::DenialsNetwork:
      return audit_denials_row(row, features, config);
  }
  return {row, CapabilityStatus::Unavailable, "unknown row"};
}

std::vector<CapabilityVerdict> evaluate_capabilities(const KernelFeatures& features,
                                                     const NodeConfig& config) {
  std::vector<CapabilityVerdict> out;
  for (auto row : all_rows()) out.push_back(evaluate_capability(row, features, config));
  return out;
}

std::vector<CapabilityRow> rows_needed_by(const Policy& policy, const NodeConfig& config) {
  std::vector<CapabilityRow> rows{CapabilityRow::Filesystem, CapabilityRow::SetidFiles};
  if (policy.net == NetMode::EgressAllowlist) rows.push_back(CapabilityRow::EgressAllowlist);
  if (policy.net == NetMode::EgressAny) rows.push_back(CapabilityRow::EgressAny);
  if (policy.ipc_isolation == IpcIsolation::Required) rows.push_back(CapabilityRow::Ipc);
  if (policy.gpu == GpuMode::Compute) rows.push_back(CapabilityRow::GpuDevices);
  if (config.hard_limits && policy.reservations.cpu) rows.push_back(CapabilityRow::LimitCpu);
  if (config.hard_limits && policy.reservations.memory_bytes)
    rows.push_back(CapabilityRow::LimitMemory);
  // pids.max comes from the node, not the policy: with hard_limits it is required too.
  if (config.hard_limits && config.pids_max) rows.push_back(CapabilityRow::LimitPids);
  return rows;
}

}  // namespace oarbank
