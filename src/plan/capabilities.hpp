// The capability table: the rows of the page's "Enforcement report"
// (https://docs.codonic.dev/oarbank/spec/sandbox-linux) and the rows the project adds
// (docs/report.md, "Rows"), and what each needs. The plan refuses a policy with the same evaluation
// the report prints, so the launcher, sandbox-check and the report can never disagree.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "probe/kernel_features.hpp"
#include "sys/landlock_abi.hpp"

namespace oarbank {

enum class CapabilityRow {
  // The page's rows.
  Filesystem,       // "filesystem, net.none, exec_writable deny, GPU"
  EgressAllowlist,  // "net.egress-allowlist, no loopback, no link-local"
  Ipc,              // "IPC"
  EgressAny,        // "net.egress-any"
  StatHiding,       // "hiding which files exist"
  // Rows the project adds (docs/report.md, "Rows").
  GpuDevices,       // the GPU part of the filesystem row: device nodes must exist
  SetidFiles,       // issue 10: no setuid or setgid files (seccomp, as RestrictSUIDSGID=)
  CgroupContainer,  // process container: a cgroup v2 leaf
  LimitCpu,         // cpu.max
  LimitMemory,      // memory.max
  LimitPids,        // pids.max
  EgressNetns,      // egress confinement by network namespace (else port only)
  // Issue 12: the module's own world (root sandbox-run), and what the filter allows in it.
  WorldIpc,            // its own IPC namespace: SysV IPC and POSIX message queues allowed
  WorldNetwork,        // its own network namespace for every module: loopback, NETLINK_ROUTE
  WorldProcessGroups,  // setsid, setpgid, TIOCSCTTY: a leaf as container, its own terminal
  OwnUser,             // issue 12: each module id its own uid and gid (sandbox-run as root)
  // Issue 12: the module's own mounts (sandbox-run as root, apply/module_mounts.hpp).
  MountsShm,     // a private /dev/shm
  MountsTmp,     // a private /tmp where the policy leaves it free
  MountsNoexec,  // writable directories noexec, nosuid, nodev
  MountsProc,    // /proc with hidepid=invisible
  MountsPts,     // a private devpts instance
  // Known limits, documented in docs/launcher.md.
  ExecWritableScope,
  MetadataCalls,
  BrokerSockets,
  // Issue 14: what sandbox-run can tell a module's author it was refused (docs/denials.md).
  DenialsSyscalls,    // the seccomp filter's refusals (user notification)
  DenialsFilesystem,  // Landlock's file refusals (audit records, ABI 7)
  DenialsNetwork,     // Landlock's TCP refusals (audit records, ABI 7)
};
inline constexpr std::size_t kCapabilityRowCount =
    static_cast<std::size_t>(CapabilityRow::DenialsNetwork) + 1;

// PortOnly: the net.egress-allowlist row where the launcher cannot make the module a network
// namespace and the node's configuration accepts Landlock's port rule alone
// (accept_port_only_egress). Such policies run, but a scheduler that asks for "enforced"
// does not place them there.
enum class CapabilityStatus { Enforced, Unavailable, NotPromised, PortOnly };

// Why sandbox-run cannot give a module mounts of its own here ("" when it can): not root,
// the node's module_mounts is false, or no CAP_SYS_ADMIN. One answer for the report's
// mounts.* rows and sandbox-run, which refuses a run (70) when module_mounts asks for them.
std::string why_no_own_mounts(const KernelFeatures& features, const NodeConfig& config);

// A row a policy needs is met when enforced, or port only (accepted by the node).
bool row_is_met(CapabilityStatus status);

struct CapabilityVerdict {
  CapabilityRow row;
  CapabilityStatus status;
  std::string reason;  // "needs Landlock ABI 4 (Linux 6.7); this kernel has ABI 3"
};

// What a row needs of this node besides a Landlock ABI: the probed fact that decides it.
enum class CapabilityFact {
  None,              // Landlock alone, or nothing on the node (a known limit, net.egress-any)
  SeccompFilter,     // seccomp(2) filters
  GpuDeviceNodes,    // a GPU device node exists
  CgroupContainer,   // a delegated cgroup v2 leaf parent with cgroup.kill or cgroup.freeze
  CgroupController,  // that, and the entry's controller enabled there
  NetworkNamespace,  // the agent can give a module a network namespace of its own
  IpcNamespace,      // the agent can give a module an IPC namespace of its own
  RootLauncher,      // the agent runs as root (it can become another user)
  MountNamespace,    // root with CAP_SYS_ADMIN and module_mounts: mounts of its own (issue 12)
};

struct CapabilityEntry;
using CapabilityEvaluator = CapabilityVerdict (*)(const CapabilityEntry& entry,
                                                  const KernelFeatures& features,
                                                  const NodeConfig& config);
using CapabilityNeed = bool (*)(const Policy& policy, const NodeConfig& config);

// The statuses a row's evaluator can give, as a set (CapabilityEntry::statuses): what
// docs/report.md's row table lists, and what a unit test holds each evaluator to.
using CapabilityStatusSet = unsigned;
constexpr CapabilityStatusSet status_bit(CapabilityStatus status) {
  return 1U << static_cast<unsigned>(status);
}
inline constexpr CapabilityStatusSet kEnforcedOrUnavailable =
    status_bit(CapabilityStatus::Enforced) | status_bit(CapabilityStatus::Unavailable);
inline constexpr CapabilityStatusSet kAlwaysUnavailable = status_bit(CapabilityStatus::Unavailable);
inline constexpr CapabilityStatusSet kAlwaysNotPromised = status_bit(CapabilityStatus::NotPromised);

// One row of the capability table: everything about the row lives here. The plan's refusal,
// the report (table, JSON, NFD labels) and sandbox-check all read these entries.
struct CapabilityEntry {
  CapabilityRow row;
  std::string_view key;    // the id: --json's "row", the NFD label's suffix, sandbox-check's
  std::string_view title;  // the page's wording
  landlock::Abi landlock;  // the Landlock ABI it needs; Unsupported: Landlock does not decide it
  CapabilityFact fact;     // the fact it needs besides
  std::string_view controller;  // CgroupController: the controller ("cpu", ...)
  CapabilityEvaluator evaluate;
  CapabilityNeed needed_by;  // which policies rely on it; nullptr: none (the report's alone)
  int plan_rank;             // where a plan lists it among the rows it relies on (--explain)
  std::string_view reason;   // what holds on every node: a known limit, or the row when met
  // What docs/report.md's row table says of it (rendered by report/row_docs.cpp, checked by
  // tests/unit/docs_test.cpp): the statuses its evaluator can give, what it needs of the node
  // in words (after "Landlock ABI N (Linux X)" where `landlock` names one), and when a policy
  // needs it (empty exactly when needed_by is nullptr).
  CapabilityStatusSet statuses;
  std::string_view needs;
  std::string_view needed_when;
};

// The table, in the report's order (the page's rows, then the project's, then known limits:
// CapabilityRow's order). The rows of a mechanism with a file pair of its own are in its pair
// (plan/mechanism.hpp, listed in plan/mechanisms.cpp); the others in capabilities.cpp.
std::span<const CapabilityEntry> capability_table();
const CapabilityEntry& capability_entry(CapabilityRow row);

// Evaluators the mechanisms' entries share.
// A row Landlock decides (with the seccomp filter beside it): the entry's ABI or better.
CapabilityVerdict landlock_row(const CapabilityEntry& entry, const KernelFeatures& features,
                               const NodeConfig& config);
// A row that holds the same on every node: not promised, or unavailable, with the entry's reason.
CapabilityVerdict not_promised_row(const CapabilityEntry& entry, const KernelFeatures& features,
                                   const NodeConfig& config);
CapabilityVerdict never_row(const CapabilityEntry& entry, const KernelFeatures& features,
                            const NodeConfig& config);

std::string_view row_key(CapabilityRow row);    // "filesystem", "net.egress-allowlist", ...
std::string_view row_title(CapabilityRow row);  // the page's wording
std::string_view to_string(CapabilityStatus status);
const std::vector<CapabilityRow>& all_rows();

// The Landlock ABI the launcher uses: the kernel's, capped by the node's configuration and
// by the newest ABI this build knows. 0 when Landlock is missing or disabled.
int effective_landlock_abi(const KernelFeatures& features, const NodeConfig& config);

std::vector<CapabilityVerdict> evaluate_capabilities(const KernelFeatures& features,
                                                     const NodeConfig& config);
CapabilityVerdict evaluate_capability(CapabilityRow row, const KernelFeatures& features,
                                      const NodeConfig& config);

// The rows a policy relies on (docs/report.md, "Rows"), each entry's needed_by, in plan_rank
// order: filesystem and setid-files always; its net mode's row; IPC when ipc_isolation is
// required; GPU when devices.gpu is compute; each hard limit when it has that reservation and
// the node turns reservations into hard limits; pids.max whenever the node has hard_limits and
// a pids_max.
std::vector<CapabilityRow> rows_needed_by(const Policy& policy, const NodeConfig& config);

}  // namespace oarbank
