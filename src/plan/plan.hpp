// The plan: Policy x KernelFeatures x NodeConfig x the paths on this node -> everything the
// launcher will do, as plain data. Pure: it never calls the kernel, so --explain and the
// golden tests show exactly what a launch applies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "plan/capabilities.hpp"
#include "plan/mechanism_network.hpp"  // egress_confinement, for the launch modes
#include "plan/module_world.hpp"
#include "plan/mount_plan.hpp"
#include "plan/seccomp_rules.hpp"
#include "probe/kernel_features.hpp"
#include "probe/path_oracle.hpp"

namespace oarbank {

// What the caller of sandbox-exec asks beyond the policy.
struct LaunchRequest {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> setenv;  // --setenv NAME=VALUE
  std::vector<int> keep_fds;                                // --keep-fd N, beyond 0, 1, 2
  // What sandbox-run (as root) made the module's own: the filter allows what it makes safe
  // (seccomp_rules.hpp). Never set by sandbox-exec.
  seccomp::ModuleWorld world;
  // sandbox-run as root with the node's module_mounts: the module gets mounts of its own
  // (plan.mounts) and the Landlock grants for them. Never set by sandbox-exec.
  bool own_mounts = false;
  // sandbox-run: the module's controlling terminal, when it has one, is the pty sandbox-run
  // made for it, never the operator's, so /dev/tty (which opens the caller's controlling
  // terminal) is granted (session 16: ssh-keygen and sudo-like prompts read /dev/tty). Never
  // set by sandbox-exec, whose caller's terminal may be the operator's.
  bool own_terminal = false;
  // As root: whose uid config.module_uid is (sandbox-run sets Own where it leased the id one,
  // or, for --explain, OwnLeasedAtRun where the run will). Ignored unprivileged (Caller).
  ModuleUserSource user_source = ModuleUserSource::ModuleUser;
  // sandbox-run: the module's cgroup leaf has the node's pids_max as pids.max. RLIMIT_NPROC is
  // then one above it (session 18's review): the kernel checks RLIMIT_NPROC first, and a fork
  // it refuses is counted nowhere, while the leaf's refusal is counted in its pids.events
  // (sandbox-run's line naming the limit). Where the leaf has none, RLIMIT_NPROC is the limit.
  bool leaf_pids_limit = false;
  // sandbox-run: the module starts in a cgroup leaf of its own (its container), so it can be
  // given a read-only view of it (MountPlan::own_cgroup).
  bool in_leaf = false;
};

struct LandlockPathRule {
  std::string path;
  std::string canonical;  // symbolic links resolved: where the rule really applies
  std::uint64_t access = 0;
  bool is_directory = false;
  std::string why;
};

struct LandlockPortRule {
  std::uint16_t port = 0;
  std::uint64_t access = 0;
  std::string why;
};

struct LandlockPlan {
  int abi = 0;
  std::uint64_t handled_fs = 0;
  std::uint64_t handled_net = 0;
  std::uint64_t scoped = 0;
  std::vector<LandlockPathRule> path_rules;
  std::vector<LandlockPortRule> port_rules;
};

struct IdentityPlan {
  bool change = false;  // the launcher runs as root: become the module user
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  // Issue 12's review: under a uid of the module's own (source Own) the launcher sets the
  // umask to 077 before the exec, so what the module creates is its alone (no other module's
  // user can read or list it). -1:
  // the umask the launcher was started with (the shared module_user: nothing changes).
  int umask = -1;
  // Attack review: the filter lets every module set its own scheduling (pid 0 in every variant;
  // +own-user: by pid too), so the launcher lowers RLIMIT_RTPRIO and RLIMIT_NICE to 0 (soft and
  // hard) before the exec. Otherwise a module inherits the caller's (a service's LimitRTPRIO=,
  // limits.conf's rtprio of an audio group) and a SCHED_FIFO busy loop starves the node:
  // cpu.max governs no real-time task. Lowering a limit needs no privilege. (Until session 15
  // only under +own-user: its review saw that pid 0 was allowed in the others too.) Session 16:
  // it also undoes what the caller's process already carries (a real-time policy, a negative
  // nice, the real-time I/O class, personality flags such as ADDR_NO_RANDOMIZE).
  bool no_realtime = true;
  // Under a uid of its own: the node's pids_max as RLIMIT_NPROC, soft and hard (only ever
  // lowered), set at the identity step. The kernel counts the tasks (threads included) of a
  // real uid, and no other process has this one (a lease is this id's alone, never one a
  // running process holds, and one run of an id at a time), so it is the module's own task
  // limit, kept by the kernel even where the leaf's pids.max cannot be written (no pids
  // controller in the v2 hierarchy, as on a hybrid node, where pids.max is best effort without
  // hard_limits). 0: the caller's limit is inherited (the shared module_user's count is every
  // module's, so no limit of one module's is set).
  std::uint64_t process_limit = 0;
  // Whose uid it is (--explain's "world").
  ModuleUserSource source = ModuleUserSource::Caller;
};

struct Plan {
  LandlockPlan landlock;
  seccomp::FilterVariant filter;
  // sandbox-run only: the filter hands its refusals to the supervisor (SECCOMP_RET_USER_NOTIF),
  // which answers each with the rule's errno and records it (docs/denials.md). Same refusals.
  bool seccomp_notify = false;
  // sandbox-run only, Landlock ABI 7: the module's Landlock denials are logged to audit after
  // its exec too (LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON), for the supervisor to read.
  bool landlock_log_new_exec = false;
  IdentityPlan identity;
  std::vector<std::string> environment;  // NAME=VALUE
  std::vector<std::string> argv;
  std::vector<int> keep_fds;
  // The paths Landlock lets the module write (work, data, temp), checked against the module
  // user's own permissions once the launcher is that user: work and temp must be readable,
  // writable and searchable, data only readable and searchable (issue 16: read-only input).
  struct WritablePath {
    std::string path;
    std::string role;  // "work", "data" or "temp"
  };
  std::vector<WritablePath> writable_dirs;
  MountPlan mounts;  // issue 12: the module's own mounts (enabled under sandbox-run as root)
  // A network namespace of its own (mechanism_network.hpp's own_network_namespace, decided
  // here once): sandbox-run's step network makes it, --explain's world says so, and the module's
  // own mounts give it the sysfs of it.
  bool own_network_namespace = false;
  std::vector<CapabilityVerdict> relies_on;
};

// The policy's writable paths with their roles, in the plan's order (work, data..., temp): what
// the launcher's identity step and sandbox-check ask the module user's access to.
std::vector<Plan::WritablePath> writable_dirs_of(const Policy& policy);

// The base system of the page's mapping table.
const std::vector<std::string>& base_read_execute_paths();
const std::vector<std::string>& base_device_paths();

// The rows this policy needs and this node does not enforce (empty: the node can run it).
std::vector<CapabilityVerdict> unmet_capabilities(const Policy& policy,
                                                  const KernelFeatures& features,
                                                  const NodeConfig& config);

// Throws Error(Unenforceable) naming the report row, missing path or missing device, and
// Error(Usage) for a bad request (a --setenv of a variable the sandbox sets).
Plan make_plan(const Policy& policy, const KernelFeatures& features, const NodeConfig& config,
               const PathOracle& paths, const LaunchRequest& request);

// Attack review (session 14): the one-plan rule above (a writable directory never beneath an
// executable rule unless exec_writable) across runs. `earlier`: the directories this module id
// was given to write in its earlier runs (its uid lease's paths): a rule that may execute and
// contains or lies within one would run what the module wrote there. nullopt, or the line
// naming the rule, its reason and the earlier directory. The caller skips it under exec_writable.
std::optional<std::string> earlier_writable_problem(const LandlockPlan& plan,
                                                    const std::vector<std::string>& earlier);

// The module's environment alone (also used by tests).
// The module's HOME: --setenv HOME's value, else its work, else its temp, else /nonexistent.
// Its own /etc/passwd (under a uid of its own) names the same home (session 18's review:
// ssh-keygen and Java's user.home read the user database, not HOME).
std::string module_home(const Policy& policy, const LaunchRequest& request);
std::vector<std::string> module_environment(const Policy& policy, const NodeConfig& config,
                                            const LaunchRequest& request);

}  // namespace oarbank
