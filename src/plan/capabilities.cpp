#include "plan/capabilities.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>

#include "plan/landlock_rights.hpp"
#include "plan/mechanism.hpp"
#include "plan/mechanism_cgroup.hpp"   // container_verdict (world.process-groups)
#include "plan/mechanism_network.hpp"  // why_no_namespace (world.net)

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
  int abi = std::min(features.landlock_abi, landlock::number(landlock::kNewestKnownAbi));
  if (config.landlock_abi_max) abi = std::min(abi, *config.landlock_abi_max);
  return abi;
}

namespace {

std::string landlock_shortfall(landlock::Abi needed, const KernelFeatures& features,
                               const NodeConfig& config) {
  std::string need = fmt::format("needs Landlock ABI {} ({})", landlock::number(needed),
                                 landlock::linux_release(needed));
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

// A row Landlock decides (with the seccomp filter beside it): the entry's ABI or better.
CapabilityVerdict landlock_row(const CapabilityEntry& entry, const KernelFeatures& features,
                               const NodeConfig& config) {
  const CapabilityRow row = entry.row;
  const int abi = effective_landlock_abi(features, config);
  if (!landlock::supports(abi, entry.landlock)) {
    return {row, CapabilityStatus::Unavailable,
            landlock_shortfall(entry.landlock, features, config)};
  }
  if (!features.seccomp_filter) {
    return {row, CapabilityStatus::Unavailable, "needs seccomp filters; this kernel has none"};
  }
  return {row, CapabilityStatus::Enforced,
          fmt::format("Landlock ABI {} (needs {}) and seccomp filters", abi,
                      landlock::number(entry.landlock))};
}

// A row that holds the same on every node: a known limit, or what Landlock cannot do.
CapabilityVerdict not_promised_row(const CapabilityEntry& entry, const KernelFeatures&,
                                   const NodeConfig&) {
  return {entry.row, CapabilityStatus::NotPromised, std::string(entry.reason)};
}
CapabilityVerdict never_row(const CapabilityEntry& entry, const KernelFeatures&,
                            const NodeConfig&) {
  return {entry.row, CapabilityStatus::Unavailable, std::string(entry.reason)};
}

namespace {

CapabilityVerdict gpu_row(const CapabilityEntry& entry, const KernelFeatures& features,
                          const NodeConfig& config) {
  const CapabilityRow row = entry.row;
  auto fs = landlock_row(entry, features, config);
  if (fs.status != CapabilityStatus::Enforced) return fs;
  if (features.gpu_device_nodes.empty()) {
    return {row, CapabilityStatus::Unavailable,
            "this node has no GPU device node (/dev/dri, /dev/nvidia*, /dev/kfd)"};
  }
  std::string nodes;
  for (const auto& node : features.gpu_device_nodes) nodes += (nodes.empty() ? "" : ", ") + node;
  return {row, CapabilityStatus::Enforced,
          landlock::supports(effective_landlock_abi(features, config), landlock::Abi::V5)
              ? "device nodes " + nodes + "; device ioctls governed (Landlock ABI 5)"
              : "device nodes " + nodes + "; device ioctls not governed below Landlock ABI 5"};
}

// The filter refuses setting the bits (docs/seccomp.md); it is loaded wherever the launcher
// runs a module, so the row needs seccomp filters alone.
CapabilityVerdict setid_row(const CapabilityEntry& entry, const KernelFeatures& features,
                            const NodeConfig&) {
  if (!features.seccomp_filter) {
    return {entry.row, CapabilityStatus::Unavailable,
            "needs seccomp filters; this kernel has none"};
  }
  return {entry.row, CapabilityStatus::Enforced, std::string(entry.reason)};
}

// Issue 12's rows: what a root sandbox-run makes the module's own. A bare sandbox-exec never
// makes it (it shares the node's namespaces; the filter refuses what they would expose), so
// these rows say what sandbox-run gives; the filter variant follows what each run made.
constexpr const char* kOnlySandboxRun =
    "; only sandbox-run started as root makes it (a bare sandbox-exec shares the node's, and "
    "the filter keeps refusing what that would expose)";

// The node's module_world key turns the module's namespaces and their allowances off.
std::optional<CapabilityVerdict> world_turned_off(const CapabilityEntry& entry,
                                                  const NodeConfig& config) {
  if (config.module_world) return std::nullopt;
  return CapabilityVerdict{entry.row, CapabilityStatus::Unavailable,
                           "the node's configuration says module_world: false: modules share "
                           "the node's IPC and network namespaces, and the filter refuses what "
                           "they would expose"};
}

CapabilityVerdict world_ipc_row(const CapabilityEntry& entry, const KernelFeatures& features,
                                const NodeConfig& config) {
  if (auto off = world_turned_off(entry, config)) return *off;
  if (!features.network_namespaces_probed) {
    return {entry.row, CapabilityStatus::Unavailable, "IPC namespaces were not probed"};
  }
  if (!features.running_as_root) {
    return {entry.row, CapabilityStatus::Unavailable,
            "the agent is not root, so it cannot give the module an IPC namespace of its own: "
            "the filter refuses SysV IPC and POSIX message queues"};
  }
  if (!features.ipc_namespaces) {
    return {entry.row, CapabilityStatus::Unavailable,
            "this node cannot create IPC namespaces: sandbox-run as root fails (step ipc, 70)"};
  }
  return {entry.row, CapabilityStatus::Enforced, std::string(entry.reason) + kOnlySandboxRun};
}

CapabilityVerdict world_network_row(const CapabilityEntry& entry, const KernelFeatures& features,
                                    const NodeConfig& config) {
  if (auto off = world_turned_off(entry, config)) return *off;
  const std::string why = why_no_namespace(features);
  if (!why.empty()) {
    return {entry.row, CapabilityStatus::Unavailable,
            why +
                ": a module without egress shares the node's network namespace (its abstract "
                "unix sockets); the filter refuses netlink"};
  }
  return {entry.row, CapabilityStatus::Enforced, std::string(entry.reason) + kOnlySandboxRun};
}

CapabilityVerdict world_groups_row(const CapabilityEntry& entry, const KernelFeatures& features,
                                   const NodeConfig& config) {
  if (auto off = world_turned_off(entry, config)) return *off;
  if (!features.running_as_root) {
    return {entry.row, CapabilityStatus::Unavailable,
            "the agent is not root: the module's world is not made, setsid and setpgid stay "
            "refused"};
  }
  auto container = container_verdict(CapabilityRow::CgroupContainer, features);
  if (container.status != CapabilityStatus::Enforced) {
    return {entry.row, CapabilityStatus::Unavailable,
            "no cgroup v2 container (" + container.reason +
                "): the process group is the container, so setsid and setpgid stay refused"};
  }
  return {entry.row, CapabilityStatus::Enforced, std::string(entry.reason) + kOnlySandboxRun};
}

// Issue 12: each module id its own uid and gid, leased by sandbox-run as root from the node's
// range (supervise/uid_registry.hpp). A bare sandbox-exec keeps module_user: it has no id.
CapabilityVerdict own_user_row(const CapabilityEntry& entry, const KernelFeatures& features,
                               const NodeConfig& config) {
  if (!config.module_users) {
    return {entry.row, CapabilityStatus::Unavailable,
            fmt::format("this node's configuration turns it off (module_users is null): every "
                        "module runs as module_user (uid {}, gid {})",
                        config.module_uid, config.module_gid)};
  }
  if (!features.running_as_root) {
    return {entry.row, CapabilityStatus::Unavailable,
            "the agent is not root, so it cannot give a module a user of its own: the module "
            "runs as its operator"};
  }
  return {entry.row, CapabilityStatus::Enforced,
          fmt::format("sandbox-run --id gives each module id a uid and gid of its own from {}-{}, "
                      "the same on every run (without --id, and a bare sandbox-exec: "
                      "module_user, uid {})",
                      config.module_users->first, config.module_users->last, config.module_uid)};
}

// Issue 14: the filter's refusals named by sandbox-run's supervisor (docs/denials.md).
CapabilityVerdict denials_syscalls_row(const CapabilityEntry& entry, const KernelFeatures& features,
                                       const NodeConfig&) {
  if (!features.seccomp_filter || !features.seccomp_user_notif) {
    return {entry.row, CapabilityStatus::Unavailable,
            "needs seccomp user notification (Linux 5.0); this kernel has none: refusals stay "
            "refusals, unnamed"};
  }
  return {entry.row, CapabilityStatus::Enforced, std::string(entry.reason)};
}

// Issue 14: Landlock's refusals are read from the kernel's audit log (docs/denials.md).
CapabilityVerdict audit_denials_row(const CapabilityEntry& entry, const KernelFeatures& features,
                                    const NodeConfig& config) {
  const int abi = effective_landlock_abi(features, config);
  if (!landlock::supports(abi, landlock::Abi::V7)) {
    return {entry.row, CapabilityStatus::Unavailable,
            "needs Landlock ABI 7 (Linux 6.15) for audit records; this node uses ABI " +
                std::to_string(abi)};
  }
  if (config.denial_audit == "off") {
    return {entry.row, CapabilityStatus::Unavailable,
            "the node's configuration says denial_audit: off"};
  }
  if (!features.running_as_root) {
    return {entry.row, CapabilityStatus::Unavailable,
            "reading the audit log needs root (CAP_AUDIT_READ)"};
  }
  if (features.audit_enabled == 0 && config.denial_audit != "enable") {
    return {entry.row, CapabilityStatus::Unavailable,
            "audit is disabled on this node (denial_audit: \"enable\" would turn it on)"};
  }
  return {entry.row, CapabilityStatus::Enforced,
          std::string(entry.reason) + (features.audit_enabled == 0
                                           ? "; audit is off and sandbox-run turns it on "
                                             "(denial_audit: \"enable\")"
                                           : "")};
}

// Issue 12: the module's own mounts, made by sandbox-run as root (apply/module_mounts.hpp).
CapabilityVerdict mounts_row(const CapabilityEntry& entry, const KernelFeatures& features,
                             const NodeConfig& config) {
  const std::string why = why_no_own_mounts(features, config);
  if (why.empty()) {
    return {entry.row, CapabilityStatus::Enforced,
            std::string(entry.reason) +
                " (sandbox-run as root; a bare sandbox-exec runs the module on the node's mounts)"};
  }
  return {entry.row, CapabilityStatus::Unavailable, why};
}

// What written code can still run, per launch mode: the known limit shrinks where sandbox-run
// gives the module its own mounts.
CapabilityVerdict exec_writable_limit_row(const CapabilityEntry& entry,
                                          const KernelFeatures& features,
                                          const NodeConfig& config) {
  if (why_no_own_mounts(features, config).empty()) {
    return {entry.row, CapabilityStatus::NotPromised,
            "exec_writable deny refuses execve of written files (Landlock), and under sandbox-run "
            "as root loading them (ld.so, mmap(PROT_EXEC): the writable directories are "
            "noexec) and running them through a descriptor (execveat(AT_EMPTY_PATH) or "
            "/proc/self/fd/N: Landlock and the noexec mounts for a written file, the filter "
            "for a memfd that could be executed); an interpreter still runs a script the "
            "module wrote, and a JIT still maps memory it wrote executable"};
  }
  return {entry.row, CapabilityStatus::NotPromised, std::string(entry.reason)};
}

using landlock::Abi;
using Fact = CapabilityFact;
using Row = CapabilityRow;

// The rows whose mechanism has no file pair of its own yet (plan/mechanism.hpp); the others
// are in their mechanism's pair (plan/mechanisms.cpp lists them). plan_rank: rows every policy
// needs first, then by the policy's fields. The golden --explain files and the first refusal a
// policy gets depend on this order.
constexpr CapabilityEntry kCoreRows[] = {
    // The page's rows.
    {Row::Filesystem, "filesystem", "filesystem, net.none, exec_writable deny, GPU",
     landlock::kFilesystemFloorAbi, Fact::SeccompFilter, "", landlock_row,
     [](const Policy&, const NodeConfig&) { return true; }, 0, "", kEnforcedOrUnavailable,
     "seccomp filters", "always"},
    {Row::Ipc, "ipc", "IPC", Abi::V6, Fact::SeccompFilter, "", landlock_row,
     [](const Policy& p, const NodeConfig&) { return p.ipc_isolation == IpcIsolation::Required; },
     4, "", kEnforcedOrUnavailable, "seccomp filters", "`ipc_isolation` is `required`"},
    {Row::StatHiding, "stat-hiding", "hiding which files exist", Abi::Unsupported, Fact::None, "",
     not_promised_row, nullptr, 0, "Landlock does not restrict stat", kAlwaysNotPromised,
     "never: Landlock does not restrict `stat`", ""},
    // Rows the project adds (docs/report.md, "Rows").
    {Row::GpuDevices, "devices.gpu", "GPU device nodes (/dev/dri, /dev/nvidia*, /dev/kfd)",
     landlock::kFilesystemFloorAbi, Fact::GpuDeviceNodes, "", gpu_row,
     [](const Policy& p, const NodeConfig&) { return p.gpu == GpuMode::Compute; }, 5, "",
     kEnforcedOrUnavailable,
     "seccomp filters (the filesystem row), and `/dev/dri`, `/dev/nvidia*` or `/dev/kfd` present; "
     "device ioctls are governed from Landlock ABI 5 (Linux 6.10)",
     "`devices.gpu` is `compute`"},
    {Row::SetidFiles, "setid-files", "no setuid or setgid files (as systemd's RestrictSUIDSGID=)",
     Abi::Unsupported, Fact::SeccompFilter, "", setid_row,
     [](const Policy&, const NodeConfig&) { return true; }, 1,
     "the seccomp filter refuses the setuid and setgid bits in chmod, fchmod, fchmodat, "
     "fchmodat2, open, openat, creat, mkdir, mkdirat, mknod and mknodat (openat2: ENOSYS)",
     kEnforcedOrUnavailable,
     "seccomp filters: the filter refuses the setuid and setgid bits in `chmod`, `fchmod`, "
     "`fchmodat`, `fchmodat2`, `open`/`openat` with `O_CREAT` or `O_TMPFILE`, `creat`, `mkdir`, "
     "`mkdirat`, `mknod`, `mknodat`, and answers `ENOSYS` to `openat2` (`docs/seccomp.md`). "
     "Enforced wherever the filter is; a module runs only where the filesystem row is enforced too",
     "always"},
    // Issue 12: the module's own world (docs/sandbox-run.md, "What a module sees").
    {Row::WorldIpc, "world.ipc", "its own IPC namespace (SysV IPC, POSIX message queues)",
     Abi::Unsupported, Fact::IpcNamespace, "", world_ipc_row, nullptr, 0,
     "each module gets an IPC namespace of its own: SysV shared memory, semaphores and message "
     "queues and POSIX message queues are allowed, the module's alone, gone with it",
     kEnforcedOrUnavailable,
     "issue 12: enforced where the agent runs as root and can create IPC namespaces (probed in a "
     "child with the network's): `sandbox-run` gives each module an IPC namespace of its own, and "
     "the filter allows SysV IPC and POSIX message queues there (`docs/sandbox-run.md`, \"What a "
     "module sees\"). Unavailable unprivileged (the filter refuses them) and where the node cannot "
     "create one (a root `sandbox-run` then fails at step `ipc` with 70 unless the node sets "
     "`module_world: false`). A bare `sandbox-exec` never makes it; the reason says so",
     ""},
    {Row::WorldNetwork, "world.net", "its own network namespace (net none: loopback only)",
     Abi::Unsupported, Fact::NetworkNamespace, "", world_network_row, nullptr, 0,
     "each module gets a network namespace of its own (net none: loopback only), so its "
     "abstract unix sockets are its own; netlink NETLINK_ROUTE and NETLINK_SOCK_DIAG read it "
     "and change nothing",
     kEnforcedOrUnavailable,
     "issue 12: as `egress.netns`, for every module: `net: none` gets loopback alone, so its "
     "abstract unix sockets are its own; `NETLINK_ROUTE` and `NETLINK_SOCK_DIAG` read it and "
     "change nothing",
     ""},
    {Row::WorldProcessGroups, "world.process-groups",
     "its own process groups and sessions (setsid, setpgid) in its leaf", Abi::Unsupported,
     Fact::CgroupContainer, "", world_groups_row, nullptr, 0,
     "with a cgroup leaf as its container and no terminal but its own, a module may leave its "
     "process group and make sessions (GNU timeout, start_new_session, job control, TIOCSCTTY "
     "on its own pty); in the process-group fallback they stay refused",
     kEnforcedOrUnavailable,
     "issue 12: root and a cgroup v2 container (the `container.cgroup` row): `setsid`, `setpgid` "
     "and `TIOCSCTTY` on its own pty are allowed where the run's container is its leaf and it "
     "holds no terminal but its own; unavailable in the process-group fallback (the reason names "
     "why), where they stay refused",
     ""},
    {Row::OwnUser, "user.own",
     "its own user: a uid and gid per module id, so modules cannot change, signal or limit "
     "each other",
     Abi::Unsupported, Fact::RootLauncher, "", own_user_row, nullptr, 0, "", kEnforcedOrUnavailable,
     "issue 12: enforced where the agent runs as root and the node's `module_users` is set (the "
     "default): `sandbox-run --id` gives each module id its own uid and gid from that range, the "
     "same on every run, so two modules cannot read, write, `chmod`, `chown`, `utimes`, set xattrs "
     "on, signal or `prlimit` each other's files and processes, and `RLIMIT_NPROC` counts each "
     "one's processes alone. Unavailable, with why, where the agent is not root (the module runs "
     "as its operator) or `module_users` is `null` (every module runs as `module_user`). A bare "
     "`sandbox-exec` has no module id and always runs its module as `module_user`; the reason says "
     "so",
     ""},
    // Issue 12: the module's own mounts (sandbox-run as root).
    {Row::MountsShm, "mounts.shm", "a private /dev/shm per module", Abi::Unsupported,
     Fact::MountNamespace, "", mounts_row, nullptr, 0,
     "each module's /dev/shm is a tmpfs of its own (its user's, size bounded by "
     "module_shm_max_bytes and its memory reservation), granted by Landlock: POSIX shared "
     "memory and semaphores work, and no other module or the node sees them",
     kEnforcedOrUnavailable,
     "issue 12, `docs/sandbox-run.md` \"Its own mounts\": enforced where the agent runs as root "
     "with `CAP_SYS_ADMIN` and the node's `module_mounts` is true (the default), for "
     "`sandbox-run`; the reason says a bare `sandbox-exec` runs the module on the node's mounts. "
     "Unavailable, with why: not root (unprivileged `sandbox-run`, a user's `sandbox-exec`), "
     "`module_mounts` false, no `CAP_SYS_ADMIN` (a container's root; `sandbox-run` then refuses "
     "with 70 while the key asks for them)",
     ""},
    {Row::MountsTmp, "mounts.tmp", "a private /tmp per module", Abi::Unsupported,
     Fact::MountNamespace, "", mounts_row, nullptr, 0,
     "each module's /tmp is a tmpfs of its own (mode 1777, bounded as its /dev/shm, noexec "
     "unless exec_writable), granted by Landlock, where nothing the policy gives it lies at or "
     "below /tmp (else the node's /tmp, as --explain's world.mounts./tmp says): tmpfile(3) and "
     "scripts naming /tmp work, and no other module or the node sees its files",
     kEnforcedOrUnavailable, "as `mounts.shm`", ""},
    {Row::MountsNoexec, "mounts.noexec",
     "written files neither mapped executable nor run through a descriptor", Abi::Unsupported,
     Fact::MountNamespace, "", mounts_row, nullptr, 0,
     "the writable directories are mounted nosuid, nodev and, unless exec_writable, noexec in "
     "the module's mount namespace: ld.so and mmap(PROT_EXEC) of a written file fail as "
     "execve does",
     kEnforcedOrUnavailable, "as `mounts.shm`", ""},
    {Row::MountsProc, "mounts.proc", "/proc shows the module's own processes alone",
     Abi::Unsupported, Fact::MountNamespace, "", mounts_row, nullptr, 0,
     "each module's /proc is a fresh instance with hidepid=invisible: the processes of root, "
     "of other users and of other modules (another Landlock domain) are not listed and "
     "cannot be opened",
     kEnforcedOrUnavailable, "as `mounts.shm`", ""},
    {Row::MountsPts, "mounts.pts", "a private devpts per module (/dev/ptmx, /dev/pts)",
     Abi::Unsupported, Fact::MountNamespace, "", mounts_row, nullptr, 0,
     "each module's /dev/pts is a devpts instance of its own, which /dev/ptmx opens: it can "
     "make ptys (openpty, script) and sees none of the node's",
     kEnforcedOrUnavailable, "as `mounts.shm`", ""},
    // Known limits, documented in docs/launcher.md.
    {Row::ExecWritableScope, "known-limit.exec-writable",
     "exec_writable deny also stops interpreters and JIT compilers", Abi::Unsupported, Fact::None,
     "", exec_writable_limit_row, nullptr, 0,
     "exec_writable deny refuses execve of written files, and the filter any memfd that "
     "could be executed; interpreters, the dynamic loader and mmap(PROT_EXEC) still run code "
     "the module wrote (its own mounts under sandbox-run as root close the last two)",
     kAlwaysNotPromised,
     "a known limit (`docs/launcher.md`, \"Known limits\"); the reason says per launch mode what "
     "still runs written code: everywhere `execve` of written files and executable memfds are "
     "refused; under `sandbox-run` as root (its own mounts) the dynamic loader and "
     "`mmap(PROT_EXEC)` of written files are too, and interpreters and JITs remain; elsewhere the "
     "dynamic loader and `mmap(PROT_EXEC)` remain as well",
     ""},
    // Per launch mode: whose files a module can change the metadata of.
    {Row::MetadataCalls, "known-limit.metadata",
     "chmod, chown, utimes and xattrs governed outside the writable directories", Abi::Unsupported,
     Fact::None, "", not_promised_row, nullptr, 0,
     "Landlock does not govern chmod, chown, utimes or xattrs. Started as root, sandbox-run "
     "gives each module id a user of its own (user.own): a module can change the mode, times "
     "and xattrs of its own files alone; where every module runs as the same module_user (a "
     "bare sandbox-exec, or module_users null), one can change those of another module's "
     "files, and of none of its operator's. Started unprivileged, a module runs as its "
     "operator: it can change those of any file of the operator's it can name (not read or "
     "write them outside its policy); sandbox-run keeps its own state out of reach (policies "
     "naming it or the node configuration refused, run records trusted only as the operator "
     "wrote them, a state directory made writable repaired)",
     kAlwaysNotPromised,
     "a known limit (`docs/launcher.md`, \"Known limits\"); the reason says per launch mode whose "
     "files a module can change the metadata of: as root under `sandbox-run` with `user.own`, its "
     "own alone; where every module runs as the same `module_user` (a bare `sandbox-exec`, or "
     "`module_users` null), other modules'; unprivileged, its operator's, with `sandbox-run`'s own "
     "state kept out of reach",
     ""},
    {Row::BrokerSockets, "known-limit.broker-sockets",
     "the broker grant reaches the broker's socket alone", Abi::Unsupported, Fact::None, "",
     not_promised_row, nullptr, 0,
     "Landlock does not govern connect to pathname unix sockets: with the broker grant a module "
     "reaches any socket its user may write to",
     kAlwaysNotPromised,
     "a known limit (`docs/launcher.md`, \"Known limits\"): Landlock does not govern `connect` to "
     "pathname unix sockets",
     ""},
    // Issue 14: what sandbox-run can tell a module's author it was refused (docs/denials.md).
    {Row::DenialsSyscalls, "denials.syscalls", "sandbox-run names the filter's refusals (seccomp)",
     Abi::Unsupported, Fact::SeccompFilter, "", denials_syscalls_row, nullptr, 0,
     "sandbox-run's supervisor answers the filter's refusals (SECCOMP_RET_USER_NOTIF) and names "
     "each with the policy change that would allow it",
     kEnforcedOrUnavailable,
     "issue 14 (`docs/denials.md`): seccomp user notification (Linux 5.0). No policy needs the "
     "`denials.*` rows: they say whether a module's author will be told why it was refused; the "
     "facts add `seccomp filters ... (user notification: yes/no)` and `audit on/off/not known (not "
     "root)`",
     ""},
    {Row::DenialsFilesystem, "denials.filesystem",
     "sandbox-run names Landlock's file refusals (audit)", Abi::Unsupported, Fact::None, "",
     audit_denials_row, nullptr, 0, "Landlock's audit records (ABI 7), read by sandbox-run",
     kEnforcedOrUnavailable,
     "issue 14: Landlock ABI 7 (Linux 6.15: its audit records; the 6.12 guest is `unavailable`), "
     "root (`CAP_AUDIT_READ`), and audit on, or the node's `denial_audit: \"enable\"`; "
     "`denial_audit: \"off\"` makes it `unavailable`",
     ""},
    {Row::DenialsNetwork, "denials.network", "sandbox-run names Landlock's TCP refusals (audit)",
     Abi::Unsupported, Fact::None, "", audit_denials_row, nullptr, 0,
     "Landlock's audit records (ABI 7), read by sandbox-run", kEnforcedOrUnavailable,
     "as `denials.filesystem`, for Landlock's TCP refusals", ""},
};

}  // namespace

std::span<const CapabilityEntry> capability_table() {
  // Gathered once per process, each entry at its row's index: the report's order is
  // CapabilityRow's. No allocation (the launch path reads it too). A row with no entry keeps an
  // empty key; a unit test walks every row.
  static const auto table = [] {
    std::array<CapabilityEntry, kCapabilityRowCount> out{};
    auto place = [&out](std::span<const CapabilityEntry> rows) {
      for (const auto& entry : rows) out[static_cast<std::size_t>(entry.row)] = entry;
    };
    place(kCoreRows);
    for (const Mechanism* mechanism : mechanisms()) place(mechanism->rows);
    return out;
  }();
  return table;
}

const CapabilityEntry& capability_entry(CapabilityRow row) {
  return capability_table()[static_cast<std::size_t>(row)];
}

std::string_view row_key(CapabilityRow row) { return capability_entry(row).key; }
std::string_view row_title(CapabilityRow row) { return capability_entry(row).title; }

const std::vector<CapabilityRow>& all_rows() {
  static const std::vector<CapabilityRow> rows = [] {
    std::vector<CapabilityRow> out;
    for (const auto& entry : capability_table()) out.push_back(entry.row);
    return out;
  }();
  return rows;
}

std::string why_no_own_mounts(const KernelFeatures& features, const NodeConfig& config) {
  if (!features.running_as_root) {
    return "the agent is not root: sandbox-run started unprivileged, and a bare sandbox-exec, "
           "run the module on the node's mounts";
  }
  if (!config.module_mounts) {
    return "this node's configuration turns the module's own mounts off (module_mounts is "
           "false): modules run on the node's mounts";
  }
  if (!features.mount_admin) {
    return "the agent lacks CAP_SYS_ADMIN (a container's root?), so it cannot make a mount "
           "namespace";
  }
  return "";
}

bool row_is_met(CapabilityStatus status) {
  return status == CapabilityStatus::Enforced || status == CapabilityStatus::PortOnly;
}

CapabilityVerdict evaluate_capability(CapabilityRow row, const KernelFeatures& features,
                                      const NodeConfig& config) {
  const CapabilityEntry& entry = capability_entry(row);
  return entry.evaluate(entry, features, config);
}

std::vector<CapabilityVerdict> evaluate_capabilities(const KernelFeatures& features,
                                                     const NodeConfig& config) {
  std::vector<CapabilityVerdict> out;
  for (auto row : all_rows()) out.push_back(evaluate_capability(row, features, config));
  return out;
}

std::vector<CapabilityRow> rows_needed_by(const Policy& policy, const NodeConfig& config) {
  std::vector<const CapabilityEntry*> needed;
  for (const auto& entry : capability_table()) {
    if (entry.needed_by != nullptr && entry.needed_by(policy, config)) needed.push_back(&entry);
  }
  std::sort(needed.begin(), needed.end(), [](const CapabilityEntry* a, const CapabilityEntry* b) {
    return a->plan_rank < b->plan_rank;
  });
  std::vector<CapabilityRow> rows;
  rows.reserve(needed.size());
  for (const auto* entry : needed) rows.push_back(entry->row);
  return rows;
}

}  // namespace oarbank
