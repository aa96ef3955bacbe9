// One sandbox-run, from its parsed request to its end (sandbox-linux.md, "Verification" and
// "Process container"; docs/sandbox-run.md, "What a run does, in order"). The module run makes
// the module's world, one step at a time (plan/launch_steps.hpp): the run record, the leaf or
// process-group container, the created directories, the network namespace or the module's own
// proxy port, the proxy, the terminal; then the supervisor spawns the launcher in it and runs
// its phases (supervisor.hpp). Each thing made is pushed on a release stack as it is made
// (release_stack.hpp) and released in reverse order, once, however the run ends: an exception
// before the launcher runs, a launcher or verification failure, the module's exit, a stop
// signal, --timeout. Issue 12's per-module user, mounts and IPC are further entries there.
//
// SIGINT, SIGTERM, SIGHUP and SIGQUIT are held (blocked) from the start of the run: one that
// arrives while the world is being made ends the run at the next step, everything made
// released, with 128+N (as a stop during the module's run does), instead of killing
// sandbox-run half-way with its directories and namespace left behind. From the spawn on, the
// supervisor serves them (signalfd); the launcher starts with the caller's mask.
#pragma once

#include <signal.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apply/ipc_namespace.hpp"
#include "apply/launch.hpp"
#include "apply/module_mounts.hpp"
#include "apply/module_network.hpp"
#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "plan/mechanism_cgroup.hpp"
#include "supervise/cgroup_leaf.hpp"
#include "supervise/namespace_stock.hpp"
#include "supervise/peer_process.hpp"
#include "supervise/release_stack.hpp"
#include "supervise/run_denials.hpp"
#include "supervise/run_state.hpp"
#include "supervise/supervisor.hpp"
#include "supervise/uid_registry.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {

struct PreparedExec;
class ProxyHost;
struct SupervisorTerminal;

struct ModuleRunRequest {
  std::string id;  // module_id_problem() must accept it (the caller words the refusal)
  // Issue 12: the id was generated (no --id): it is never run again, so it leases no user of
  // its own (module_users); the module runs as module_user.
  bool id_generated = false;
  Policy policy;
  NodeConfig config;
  // --config as given (nothing: $OARBANK_AGENT_CONFIG, else the default): the file read, kept
  // out of the module's reach with the run state directory.
  std::optional<std::string> config_path;
  // The policy file as given ("-": standard input, nothing to keep out of reach). Attack review
  // (session 14): a policy inside the module's work or data was the module's to rewrite, and
  // its next run read the grants it wrote there.
  std::string policy_path;
  LaunchRequest launch;  // the module's argv, --setenv, --keep-fd (make_launch_request)
  std::optional<double> timeout_seconds;
  double kill_after_seconds = 10;
  // --result is wanted: the leaf's CPU time and memory peak are read for it (supervisor.hpp).
  bool usage = true;
  std::optional<std::string> proxy_log;  // --proxy-log; nothing: stderr
  // --denials: what the run was refused is said on success too, and so is a program it wrote
  // and ran on the noexec mounts (session 20: CMake's try_run fails, and configure exits 0).
  bool report_on_success = false;
  // Prints one line of sandbox-run's own on stderr (notes on the way, how the run ended).
  std::function<void(const std::string&)> say;
};

// A generated module id: "run-" and 16 hex digits from getrandom. Throws Error(StepFailed).
std::string generate_module_id();

class ModuleRun {
 public:
  explicit ModuleRun(ModuleRunRequest request);
  ~ModuleRun();  // releases whatever is still held, newest first
  ModuleRun(const ModuleRun&) = delete;
  ModuleRun& operator=(const ModuleRun&) = delete;

  // Once. Makes the world, runs the module in it to its end, and releases all of it but the run
  // record (finish() releases that, after the caller wrote --result). Throws what
  // run_guarded maps (Error, PolicyError, ConfigError) only before the launcher runs, with
  // everything made so far released. A stop signal before the spawn: RunEnd::Signaled,
  // 128+N, nothing started.
  RunResult run();
  // How the run ended, as --result's JSON line.
  [[nodiscard]] std::string result_json(const RunResult& result) const;
  // Removes the run record: the last release. Then the caller's signal mask is back.
  void finish();
  // Issue 14: what the sandbox refused the module during run() (docs/denials.md); null when
  // run() ended before the launch was prepared.
  [[nodiscard]] const RunDenials* denials() const { return denials_.get(); }

 private:
  void claim_record();
  void lease_user();
  void make_container();
  void make_directories();
  void take_stock();
  void make_devpts();
  void make_network();
  void make_proxy();
  void make_terminal();
  // What of the module's world this run makes its own (the filter's allowances follow it).
  seccomp::ModuleWorld module_world() const;
  void say_how_it_ended(const RunResult& result);
  // A stop signal that arrived since the last step (consumed), else 0.
  int stop_requested() const;
  RunResult stopped_before_spawn(int sig);
  void restore_signal_mask();
  // The child's entry point (SupervisedLaunch::launcher), given `child_`.
  [[noreturn]] static void launch_in_child(void* context, int status_fd);

  ModuleRunRequest request_;
  sigset_t caller_mask_{};  // the mask before run(): the launcher's, and restored at the end
  CallerDispositions caller_dispositions_;  // before run(): the launcher's (spawn.hpp)
  bool mask_held_ = false;
  bool root_ = false;
  bool egress_ = false;
  // The module user: the id's leased uid and gid, else the node's module_user (root), else
  // this very user (not root: the module runs as it).
  uid_t module_uid_ = 0;
  bool own_user_ = false;  // module_uid_ is leased to this id alone (the filter's own_user)
  std::vector<std::string> lease_paths_;  // what the id's earlier runs were given to write
  std::vector<std::string> end_notes_;    // say_how_it_ended's lines, for --result's "notes"
  // CLOCK_REALTIME_COARSE, as files' times: what the module wrote since its spawn.
  timespec spawned_at_{};
  bool module_ran_ = false;  // its exec verified, or stopped on the way: what it was given is its
  gid_t module_gid_ = 0;
  std::optional<CgroupPlace> place_;  // where the leaf goes; nothing: why_not_
  std::string why_not_;
  std::string state_dir_;  // the run state directory (run_state_dir), read once
  std::optional<RunState> state_;
  SupervisedLaunch launch_;
  LeafLimits limits_;
  NodeConfig module_config_;  // the node's, with the module's own proxy port (port only)
  std::optional<std::size_t> directories_;  // their place on the stack
  std::unique_ptr<PreparedExec> prepared_;
  // Declared before the proxy, whose log tap adds to it from the proxy's thread.
  std::unique_ptr<RunDenials> denials_;
  bool namespace_confinement_ = false;
  ModuleNetwork network_;
  ModuleProcesses members_;
  std::unique_ptr<ProxyHost> proxy_;
  std::unique_ptr<SupervisorTerminal> terminal_;
  struct ChildLaunch {
    PreparedExec* prepared = nullptr;
    int netns_fd = -1;
    bool own_ipc = false;              // its own IPC namespace before the launcher's steps
    int ipc_fd = -1;                   // that namespace, made ahead by the stock (-1: unshare one)
    int mqueue_fd = -1;                // its mqueue file system, detached, made ahead by the stock
    IpcLimits ipc_limits;              // written into that namespace (ipc_namespace.hpp)
    bool reset_oom_score_adj = false;  // sandbox-run's own is negative: the module's is 0
    // What it attaches in its mount namespace: devpts_, user_database_ (module_mounts.hpp).
    ModuleMountSources mount_sources;
    // Sends its mount namespace to the supervisor once made (the run gives it to the stock).
    bool send_mounts = false;
    // Sends its own /tmp (the tmpfs) to the supervisor once mounted (denial_listener.hpp).
    bool send_own_tmp = false;
  } child_;
  UniqueFd own_tmp_;  // the module's own /tmp, held from its exec to say_how_it_ended
  std::optional<NamespaceSet> stock_;  // what the node's namespace stock handed this run
  bool own_mounts_ = false;  // issue 12: the module's own mount namespace (root, module_mounts)
  UniqueFd devpts_;          // its devpts instance, detached until the child attaches it
  ModuleUserDatabase user_database_;  // its own /etc/passwd and /etc/group (a lease of its own)
  ReleaseStack held_;  // last: released before the members its releases use are destroyed
};

}  // namespace oarbank
