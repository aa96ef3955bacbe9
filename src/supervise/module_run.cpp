#include "supervise/module_run.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <utility>

#include "apply/before_launch.hpp"
#include "apply/ipc_namespace.hpp"
#include "apply/module_mounts.hpp"
#include "apply/policy_file.hpp"
#include "apply/prepared_exec.hpp"
#include "plan/denial_advice.hpp"
#include "plan/launch_steps.hpp"
#include "plan/mechanism_cgroup.hpp"
#include "plan/module_world.hpp"
#include "plan/protected_paths.hpp"
#include "policy/module_id.hpp"
#include "probe/path_facts.hpp"
#include "probe/probe.hpp"
#include "probe/proc_status.hpp"
#include "supervise/cgroup_leaf.hpp"
#include "supervise/proxy_host.hpp"
#include "supervise/terminal_front.hpp"
#include "supervise/uid_registry.hpp"
#include "supervise/writable_dirs.hpp"
#include "sys/descriptor_passing.hpp"
#include "sys/error.hpp"
#include "sys/landlock_abi.hpp"
#include "sys/safe_open.hpp"
#include "sys/text_file.hpp"

namespace oarbank {
namespace {

// Filters this process already runs under (a container runtime's), from /proc/self/status.
// PR_GET_SECCOMP first: 0 (SECCOMP_MODE_DISABLED) means no filter at all, so the count is 0
// without generating /proc/self/status (about 20 us here); in filter mode, or where prctl is
// refused, the count is read as before.
int own_seccomp_filters() {
  if (::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 0) return 0;
  return parse_proc_status(read_text_file("/proc/self/status")).seccomp_filters.value_or(0);
}

// The configuration file sandbox-run reads (load_node_config's order), absolute.
std::string effective_config_path(const std::optional<std::string>& explicit_path) {
  std::string path = kDefaultConfigPath;
  if (explicit_path) {
    path = *explicit_path;
  } else if (const char* env = std::getenv(kConfigEnvVar); env != nullptr && *env != '\0') {
    path = env;
  }
  return absolute_path(std::move(path));
}

// What asks sandbox-run to stop (the supervisor's kStopSignals).
sigset_t stop_signals() {
  sigset_t set;
  ::sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::sigaddset(&set, sig);
  return set;
}

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

}  // namespace

std::string generate_module_id() {
  unsigned char bytes[8];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    throw Error(ErrorKind::StepFailed, "getrandom: " + errno_text(errno));
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "run-";
  for (unsigned char b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return id;
}

// In the child, inside the module's container: sandbox-exec's own steps on what the parent
// prepared (apply/launch.cpp), ending in the module's exec.
void ModuleRun::launch_in_child(void* context, int status_fd) {
  auto* child = static_cast<ChildLaunch*>(context);
  set_launch_status_fd(status_fd);
  // Attack review (session 15): a negative oom_score_adj of sandbox-run's (an orchestrator's,
  // protecting the agent) is not the module's: the OOM killer would take the node's processes
  // before a module that ate the memory. Best effort: the value is advice to the kernel.
  if (child->reset_oom_score_adj) {
    const int fd = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      [[maybe_unused]] const ssize_t written = ::write(fd, "0", 1);
      ::close(fd);
    }
  }
  // Issue 12: an IPC namespace of the module's own, made by its first process (as root, before
  // the launcher drops the capability to). Its SysV objects and POSIX message queues are the
  // module's alone and go with its last process: nothing to release.
  const char* what = nullptr;
  auto ipc_failed = [&](int err, const char* advice = "") {
    std::string line =
        "oarbank-agent sandbox-run: " +
        step_failed_message(LaunchStep::Ipc, std::string(what) + ": " + errno_text(err)) + advice;
    std::fprintf(stderr, "%s\n", line.c_str());
    report_launch_status(exit_code_for(ErrorKind::StepFailed), line);
    ::_exit(exit_code_for(ErrorKind::StepFailed));
  };
  // The stock's namespace when the run took one (namespace_stock.hpp), else a new one.
  if (int err = !child->own_ipc      ? 0
                : child->ipc_fd >= 0 ? join_ipc_namespace(child->ipc_fd, &what)
                                     : enter_own_ipc_namespace(&what);
      err != 0) {
    ipc_failed(err);
  }
  if (child->own_ipc) {
    if (int err = limit_ipc_namespace(child->ipc_limits, &what); err != 0) {
      ipc_failed(err,
                 ": the module's IPC namespace gets its limits there, which sandbox-run must be "
                 "able to write (not under systemd's ProtectKernelTunables= or a container's "
                 "read-only /proc/sys); a node with module_world false makes no IPC namespace");
    }
  }
  if (child->netns_fd >= 0) {
    if (int err = join_network_namespace(child->netns_fd); err != 0) {
      std::string line =
          "oarbank-agent sandbox-run: " +
          step_failed_message(LaunchStep::Network,
                              "setns(the module's network namespace): " + errno_text(err));
      std::fprintf(stderr, "%s\n", line.c_str());
      report_launch_status(exit_code_for(ErrorKind::StepFailed), line);
      ::_exit(exit_code_for(ErrorKind::StepFailed));
    }
  }
  // Its own mounts, as root, before the identity step (apply/module_mounts.hpp).
  StepError mounts_error;
  if (!make_module_mounts(child->prepared->plan, child->prepared->launch, child->mount_sources,
                          mounts_error)) {
    std::string line =
        "oarbank-agent sandbox-run: " + step_failed_message(LaunchStep::Mounts, mounts_error.what) +
        ": " + errno_text(mounts_error.err);
    std::fprintf(stderr, "%s\n", line.c_str());
    report_launch_status(exit_code_for(ErrorKind::StepFailed), line);
    ::_exit(exit_code_for(ErrorKind::StepFailed));
  }
  // Where the run gives its namespaces back to the stock, the mount namespace goes with them
  // (NamespaceSet::mounts): sent now, before the exec, so that it is held elsewhere before the
  // module can exit. Only a cost saved: without it the module's exit tears it down, as ever.
  if (child->send_mounts) {
    const UniqueFd mounts = own_mount_namespace();
    if (mounts.valid()) (void)send_with_descriptor(status_fd, "mounts\n", mounts.get());
  }
  // Its own /tmp, which the supervisor looks at after a failing exit (a program written there,
  // the tmpfs full): the tmpfs itself, opened where the mounts put it. Only a diagnosis lost
  // where it cannot be sent.
  if (child->send_own_tmp) {
    const UniqueFd tmp(::open("/tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (tmp.valid()) (void)send_with_descriptor(status_fd, "tmp\n", tmp.get());
  }
  // The queues' Landlock rule, once the mounts are made: in its own mount namespace the
  // queues are mounted at /dev/mqueue and go with it (apply/ipc_namespace.hpp).
  if (int err = child->own_ipc ? add_own_mqueue_rule(child->prepared->launch.ruleset.get(),
                                                     child->prepared->plan.landlock.handled_fs,
                                                     child->prepared->plan.mounts.enabled,
                                                     child->mqueue_fd, &what)
                               : 0;
      err != 0) {
    ipc_failed(err);
  }
  launch(child->prepared->plan, child->prepared->launch, "oarbank-agent sandbox-run");
}

ModuleRun::ModuleRun(ModuleRunRequest request) : request_(std::move(request)) {
  if (!request_.say) request_.say = [](const std::string&) {};
}

ModuleRun::~ModuleRun() {
  try {
    held_.release_above(0);  // newest first, while the members its releases use live
  } catch (...) {  // NOLINT(bugprone-empty-catch): every release ran; nothing is left to undo
  }
  restore_signal_mask();
}

void ModuleRun::finish() {
  held_.release_above(0);
  restore_signal_mask();
}

int ModuleRun::stop_requested() const {
  const sigset_t stops = stop_signals();
  const timespec now{0, 0};
  const int sig = ::sigtimedwait(&stops, nullptr, &now);
  return sig > 0 ? sig : 0;
}

// The run was asked to stop before its module was spawned: all but the record is released
// here, as at the end of a run; the result says so as a stop during the run would (128+N).
RunResult ModuleRun::stopped_before_spawn(int sig) {
  RunResult result;
  result.end = RunEnd::Signaled;
  result.stop_signal = sig;
  result.exit_code = 128 + sig;
  result.cgroup_container = launch_.leaf.has_value();
  request_.say(std::string("stopped by SIG") + sigabbrev_np(sig) +
               " before the module was started: nothing of the run is left");
  held_.release_above(1);
  return result;
}

// A stop signal that arrives once the run is over (while --result is written) asks to end
// what already ended: consumed, so that the mask's return does not kill this process now.
void ModuleRun::restore_signal_mask() {
  if (!mask_held_) return;
  while (stop_requested() != 0) {
  }
  ::sigprocmask(SIG_SETMASK, &caller_mask_, nullptr);
  mask_held_ = false;
}

RunResult ModuleRun::run() {
  // A module id names a path component (the leaf, the record): never trusted unchecked.
  if (auto problem = module_id_problem(request_.id)) {
    throw Error(ErrorKind::Usage, "module id " + request_.id + ": " + *problem);
  }
  const sigset_t stops = stop_signals();
  ::sigprocmask(SIG_BLOCK, &stops, &caller_mask_);
  mask_held_ = true;
  // Where they are not a terminal, the module shares this process's stdout and stderr (a
  // journal stream, a pipe, a log file): a module that shuts the stream down or ends the
  // pipe's reader made this process's next line of its own raise SIGPIPE, and one that
  // ftruncates a shared log file up to the caller's RLIMIT_FSIZE made it raise SIGXFSZ; either
  // killed it before the teardown, --result and the record's removal (session 13's attack
  // reviews). So both are ignored here for the rest of this process (a line then fails with
  // EPIPE or EFBIG, and the run goes on); the launcher gets the caller's back (spawn.hpp).
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &caller_dispositions_.pipe);
  ::sigaction(SIGXFSZ, &ignore, &caller_dispositions_.file_size);
  // An ignored SIGCHLD is kept across exec, and under it the kernel reaps every child at once:
  // waitpid answered ECHILD for the supervisor's own children (its getent, the module) and a
  // --learn that started it hung (session 21's diff review). This process reaps its own.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigaction(SIGCHLD, &default_action, nullptr);
  root_ = ::geteuid() == 0;
  egress_ = request_.policy.net == NetMode::EgressAllowlist;
  const Policy& policy = request_.policy;
  const NodeConfig& config = request_.config;
  claim_record();
  lease_user();

  launch_.id = request_.id;
  launch_.timeout_seconds = request_.timeout_seconds;
  launch_.kill_after_seconds = request_.kill_after_seconds;
  launch_.usage = request_.usage;
  launch_.expected = root_ ? ExecExpectation{module_uid_, module_gid_, true}
                           : ExecExpectation{::getuid(), ::getgid(), false};
  launch_.expected.inherited_seccomp_filters = own_seccomp_filters();
  if (int sig = stop_requested()) return stopped_before_spawn(sig);
  make_container();
  if (int sig = stop_requested()) return stopped_before_spawn(sig);

  // How an egress module is kept to the proxy (plan/mechanism_network.cpp, one answer with the
  // report and sandbox-check): probed once, here, for the plan too.
  KernelFeatures features = probe_kernel(config, launch_probe_scope(policy, config));
  const EgressConfinement confinement = egress_confinement(features, config);
  namespace_confinement_ = egress_ && confinement == EgressConfinement::Namespace;
  // Port only (not root, accepted by the node): the module gets a listener of its own on
  // proxy_listen's address, on a port the kernel picks, so that the proxy knows whose
  // allowlist applies by the listener and modules run side by side. Its plan (Landlock's
  // port rule, the proxy variables) names that port. Inside a namespace of its own (root),
  // the configured port is the module's alone anyway. Refused: the plan says so (70).
  module_config_ = config;
  // The plan's identity and the launcher's directories rule take the module user from here.
  if (root_) {
    module_config_.module_uid = module_uid_;
    module_config_.module_gid = module_gid_;
  }
  if (egress_ && confinement == EgressConfinement::PortOnly) {
    network_.listener = listen_on(config.proxy_host, 0);
    held_.push(LaunchStep::Network, [this] { network_ = ModuleNetwork{}; });
    module_config_.proxy_port = listening_port(network_.listener.get());
  }
  make_directories();
  if (int sig = stop_requested()) return stopped_before_spawn(sig);

  // The filter allows what the module's own world makes safe (seccomp_rules.hpp); the world
  // is made below (make_network, the child's IPC namespace) or the run fails with 70 before
  // the module starts, so the plan never allows more than what this run made.
  request_.launch.world = module_world();
  request_.launch.user_source =
      own_user_ ? ModuleUserSource::Own : ModuleUserSource::ModuleUser;  // --explain's "world"
  // Issue 12: the module's own mounts, made in the child (launch_in_child). The node asks for
  // them (module_mounts, the default); where this process cannot make them the run is
  // refused, never run on the node's mounts. Unprivileged, there are none (the report's
  // mounts.* rows say so).
  if (root_ && config.module_mounts) {
    const std::string mounts = why_no_own_mounts(features, config);
    if (!mounts.empty()) {
      throw step_error(LaunchStep::Mounts,
                       "module_mounts is true in the node configuration, and " + mounts, 0,
                       ErrorKind::Unenforceable);
    }
    own_mounts_ = true;
  }
  request_.launch.own_mounts = own_mounts_;
  request_.launch.own_terminal = true;

  // Everything the launch can fail at softly, here in the parent: a failure is one line and
  // an exit code, with what was made released.
  request_.launch.leaf_pids_limit = launch_.leaf && launch_.leaf->pids_limited();
  request_.launch.in_leaf = launch_.leaf.has_value();
  prepared_ = prepare_exec(request_.launch, module_config_, policy, std::move(features));
  // Attack review (session 14): a directory this id wrote in an earlier run given now to read
  // and execute (its bundle, say) ran what it wrote there, past exec_writable false and the
  // written directories' noexec mounts, which hold for one run.
  if (own_user_ && !policy.exec_writable) {
    if (auto problem = earlier_writable_problem(prepared_->plan.landlock, lease_paths_)) {
      throw Error(ErrorKind::Unenforceable, step_failed_message(LaunchStep::Directories, *problem));
    }
  }
  // Issue 14: the refusals of the run, from the filter, Landlock's audit log and the proxy.
  LandlockAdviceContext advice{writable_paths(policy), policy.exec_writable,
                               policy.temp.value_or("")};
  for (const auto& destination : policy.egress) {
    if (destination.is_ip) {
      advice.egress_literals.push_back(
          canonical_endpoint(destination.host, std::to_string(destination.port)));
    }
  }
  // What this process hands the module as 0, 1 and 2 (regular files only: a terminal or a
  // pipe has no path a grant could name).
  for (int fd = 0; fd <= 2; ++fd) {
    struct stat st {};
    char path[PATH_MAX];
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const ssize_t n = ::readlink(link.c_str(), path, sizeof path - 1);
    if (n > 0 && path[0] == '/')
      advice.handed_files.emplace_back(path, static_cast<std::size_t>(n));
  }
  advice.tmp_kept_by = prepared_->plan.mounts.tmp_kept_by;
  denials_ = std::make_unique<RunDenials>(prepared_->plan.filter, std::move(advice));
  denials_->check_writable_grants([this](const std::string& key, const std::string& path,
                                         bool makes_entries) -> std::string {
    if (key == "runtime") {
      // Session 21's real-programs review: a read refused in a directory this id was given to
      // write in an earlier run proposed runtime (read and execute), which the next trial
      // refused (70) by the id's history; "data" reads it without executing.
      if (request_.policy.exec_writable) return "";
      LandlockPlan proposed;
      proposed.path_rules.push_back(
          {path, path, LANDLOCK_ACCESS_FS_EXECUTE, true, "runtime: read and execute"});
      const auto problem = earlier_writable_problem(proposed, lease_paths_);
      return problem ? *problem + "; to read it, add it to \"data\" (read and write, no execute)"
                     : "";
    }
    std::string problem = writable_dir_problem(path, module_uid_);
    if (problem.empty() && makes_entries)
      problem = write_permission_problem(path, module_uid_, module_gid_);
    return problem;
  });
  // Started unprivileged, the module runs as this very user: only Landlock's signal scoping
  // (ABI 6) keeps it from killing or stopping its supervisor, and the container with it.
  if (!root_ && (prepared_->plan.landlock.scoped & LANDLOCK_SCOPE_SIGNAL) == 0) {
    throw Error(ErrorKind::Unenforceable,
                step_failed_message(
                    LaunchStep::Container,
                    "sandbox-run started unprivileged runs the module as the same user, and "
                    "without Landlock signal scoping (ABI 6; this node uses " +
                        std::to_string(prepared_->plan.landlock.abi) +
                        ") the module could signal sandbox-run and leave its container; run it as "
                        "root"));
  }
  for (void (ModuleRun::*step)() :
       {&ModuleRun::take_stock, &ModuleRun::make_devpts, &ModuleRun::make_network,
        &ModuleRun::make_proxy, &ModuleRun::make_terminal}) {
    if (int sig = stop_requested()) return stopped_before_spawn(sig);
    (this->*step)();
  }
  // What the mechanisms make before the launcher's steps (apply/before_launch.hpp), each
  // pushed with its release.
  for (const BeforeLaunch& setup : before_launch_setups()) {
    if (setup.module_run == nullptr) continue;
    if (int sig = stop_requested()) return stopped_before_spawn(sig);
    if (auto release = setup.module_run(*prepared_, ModuleRunSetup{network_.netns.get()})) {
      held_.push(setup.step, std::move(release));
    }
  }
  // A stop signal from here on is the supervisor's (its signalfd reads what is pending).

  child_.prepared = prepared_.get();
  child_.netns_fd = network_.netns.get();
  child_.own_ipc = request_.launch.world.own_namespaces;
  child_.ipc_fd = stock_ ? stock_->ipc.get() : -1;
  child_.ipc_limits = ipc_limits_for(request_.config.module_shm_max_bytes);
  child_.reset_oom_score_adj = read_text_file("/proc/self/oom_score_adj").starts_with("-");
  child_.mqueue_fd = stock_ ? stock_->mqueue.get() : -1;
  child_.mount_sources = {devpts_.get(), user_database_.passwd.get(), user_database_.group.get()};
  child_.send_mounts = own_mounts_ && stock_.has_value();
  launch_.module_mounts = stock_ ? &stock_->mounts : nullptr;
  child_.send_own_tmp = own_mounts_ && prepared_->plan.mounts.own_tmp;
  launch_.own_tmp = &own_tmp_;
  launch_.launcher = &launch_in_child;
  launch_.launcher_context = &child_;
  launch_.terminal = terminal_.get();
  launch_.launcher_mask = &caller_mask_;
  launch_.launcher_dispositions = &caller_dispositions_;
  // Issue 14: the filter's refusals go to the supervisor, which answers and records them.
  denials_->prepare(prepared_->plan, config.denial_audit);
  launch_.seccomp_listener = denials_->seccomp_listener();
  const std::int64_t own_uid =
      prepared_->plan.identity.change && prepared_->plan.identity.source == ModuleUserSource::Own
          ? static_cast<std::int64_t>(prepared_->plan.identity.uid)
          : -1;
  const std::int64_t own_gid = own_uid >= 0 ? prepared_->plan.identity.gid : -1;
  launch_.after_spawn = [this, own_uid, own_gid,
                         then = std::move(launch_.after_spawn)](pid_t module_pid) {
    denials_->spawned(module_pid, own_uid, own_gid, launch_.leaf ? launch_.leaf->dir_fd() : -1);
    if (then) then(module_pid);
  };
  // The audit reader stops while the module's first process is still unreaped (its pid held).
  launch_.before_reap = [this] { denials_->finish(); };
  // Coarse, as the kernel stamps files' times: a fine clock read here can be later than the
  // mtime of a file the module writes within the same tick.
  ::clock_gettime(CLOCK_REALTIME_COARSE, &spawned_at_);
  RunResult result = supervise(launch_, *state_);

  // The module ran (its exec was verified, or it was stopped on the way): what it was given
  // to write in is its data now. A launch that failed leaves nothing made for it.
  module_ran_ = result.end == RunEnd::Exited || result.end == RunEnd::Signaled;
  if (directories_ && module_ran_) {
    held_.keep(*directories_);
  }
  say_how_it_ended(result);
  held_.release_above(1);  // all but the record: the proxy stops, every tunnel closes with it
  return result;
}

// The id's record, before anything is made: the intent that a later start or sandbox-ctl
// reads if this run is killed (run_state.hpp).
void ModuleRun::claim_record() {
  state_dir_ = run_state_dir();
  const std::string& state_dir = state_dir_;
  // sandbox-run's own files are out of the module's reach, whatever the policy names.
  std::vector<NamedPath> protect = {
      {"the run state directory", path_forms(state_dir)},
      {"the node configuration", path_forms(effective_config_path(request_.config_path))}};
  // Issue 12: the registry, where this run uses it (a module that could write it could take
  // another module's uid, and its files with it).
  if (root_ && request_.config.module_users && !request_.id_generated) {
    protect.push_back({"the module user registry", path_forms(user_registry_dir())});
  }
  std::vector<NamedPath> named = policy_paths(request_.policy);
  for (auto& path : named) path.forms = path_forms(path.forms.front());
  if (auto problem = protected_path_problem(named, protect)) {
    throw Error(ErrorKind::Unenforceable, step_failed_message(LaunchStep::RunState, *problem) +
                                              ": a module must not reach sandbox-run's own "
                                              "files");
  }
  // Attack review (session 14): the policy file itself, where the module may write (reading it
  // is harmless: a bundle may hold it). Inside work, temp or data the module replaced it, and
  // its next run read the grants it wrote (a runtime path, egress, exec_writable).
  if (auto problem = policy_file_inside_writable(request_.policy_path, request_.policy)) {
    throw Error(ErrorKind::Unenforceable, step_failed_message(LaunchStep::RunState, *problem) +
                                              ": " + kPolicyFileInsideWritableWhy);
  }
  std::string repaired;
  // Walked and checked once (each component, no link, owner, mode); the sweep and the claim
  // below use this descriptor, the directory that walk checked, instead of walking again.
  UniqueFd state_fd = open_state_dir(state_dir, true, &repaired);
  if (!repaired.empty()) {
    request_.say("the run state directory was writable by others (" + repaired +
                 "): repaired; records written meanwhile are not trusted");
  }
  // Session 21's real-programs review: the next run of an id whose sandbox-run was killed
  // tore down what was left (its processes, leaf and record) without a word. Said for this id
  // alone: another module's runs are not this run's output's business.
  for (const auto& cleaned : clean_stale_runs(state_fd.get())) {
    if (cleaned == request_.id) {
      request_.say("an earlier run of module id " + cleaned +
                   " whose sandbox-run was killed had left its processes, leaf or record: "
                   "torn down (its --result, if it asked for one, was never written)");
    }
  }
  place_ = find_cgroup_place(request_.config, why_not_);
  // The intent, before anything is made: a sandbox-run killed from here on leaves a record
  // that names the leaf (made or not yet), so the next start or sandbox-ctl removes it.
  state_.emplace(RunState::claim(
      std::move(state_fd), state_dir,
      RunRecord{.id = request_.id,
                .supervisor_pid = ::getpid(),
                .supervisor_start_time = process_start_time(::getpid()),
                .cgroup = place_ ? place_->parent + "/" + leaf_name_for(request_.id) : "",
                // The intent, before the kernel is probed: a root run's module gets one under
                // module_world, and an egress one wherever a namespace can confine it (the plan's
                // own_network_namespace decides; a node that cannot make one runs an egress
                // module port only or refuses it). Informational: nothing acts on it.
                .netns = root_ && (egress_ || request_.config.module_world),
                .started_at = static_cast<std::int64_t>(std::time(nullptr))}));
  held_.push(LaunchStep::RunState, [this] { state_->finish(); });
  // Issue 16: an operator at a terminal learns the id (a generated one too) sandbox-ctl
  // takes; a supervisor reading stderr from a pipe gets no extra line.
  if (::isatty(STDERR_FILENO) == 1) {
    request_.say("module id " + request_.id + " (sandbox-ctl status|freeze|thaw|kill " +
                 request_.id + ")");
  }
}

// Issue 12: the module id's own uid and gid, leased from the node's range (the same on every
// run of the id), when sandbox-run is root and the node has module_users; else the fixed
// module_user (root), or this very user (not root). The lease is persistent on purpose
// (uid_registry.hpp): nothing to release.
void ModuleRun::lease_user() {
  const NodeConfig& config = request_.config;
  module_uid_ = root_ ? config.module_uid : ::getuid();
  module_gid_ = root_ ? config.module_gid : ::getgid();
  // A generated id is never run again: a lease for it would only grow the registry, and the
  // directories it made would refuse the next run (another id, another uid).
  if (!root_ || !config.module_users || request_.id_generated) return;
  const Policy& policy = request_.policy;
  std::vector<std::string> added;
  try {
    // Its own /etc/passwd and /etc/group where it gets mounts of its own (step mounts).
    user_database_.home = module_home(policy, request_.launch);
    const UidLease lease = lease_module_user(user_registry_dir(), request_.id, *config.module_users,
                                             {}, static_cast<std::int64_t>(std::time(nullptr)),
                                             config.module_mounts ? &user_database_ : nullptr);
    module_uid_ = lease.uid;
    module_gid_ = lease.gid;
    own_user_ = true;
    // The id's history before this run: what earlier_writable_problem judges.
    lease_paths_ = lease.paths;
    // Session 14's attack reviews: this run's directories join the lease before any is made
    // (the intent: a sandbox-run killed from here on leaves them where reclaim looks), and
    // leave it again when the run ends without its module having run (a refused run's paths
    // are no history of the id's).
    std::vector<std::string> writable = writable_paths(policy);
    for (auto& path : writable) {
      if (!std::binary_search(lease_paths_.begin(), lease_paths_.end(), path) &&
          std::find(added.begin(), added.end(), path) == added.end()) {
        added.push_back(std::move(path));
      }
    }
    if (!added.empty()) remember_lease_paths(user_registry_dir(), request_.id, added);
  } catch (const Error& e) {
    throw step_error(LaunchStep::ModuleUser, e.what(), 0, e.kind());
  }
  if (added.empty()) return;
  held_.push(LaunchStep::ModuleUser, [this, added = std::move(added)] {
    if (!module_ran_) forget_lease_paths(user_registry_dir(), request_.id, added);
  });
}

// The leaf, else the process group (the supervisor's; nothing to make for it).
void ModuleRun::make_container() {
  limits_ = make_leaf_limits(request_.policy, request_.config);
  if (!place_) {
    if (limits_.required && !limits_.controllers.empty()) {
      throw Error(ErrorKind::Unenforceable,
                  step_failed_message(LaunchStep::Cgroup,
                                      "the node requires hard limits, and there is no cgroup v2 "
                                      "container here: " +
                                          why_not_));
    }
    request_.say("no cgroup v2 container (" + why_not_ +
                 "): the container is a process group only");
    return;
  }
  try {
    launch_.leaf = CgroupLeaf::create(*place_, leaf_name_for(request_.id), limits_);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Busy) {
      // A cgroup of that name that is not ours: the record must not name it.
      RunRecord record = state_->record();
      record.cgroup.clear();
      state_->write(record);
    }
    throw;
  }
  // Killed and removed (a second time after the supervisor's teardown: nothing left to do).
  held_.push(LaunchStep::Cgroup, [this] { launch_.leaf.reset(); });
}

// contract.md, "No root": the policy's missing directories, the module user's.
void ModuleRun::make_directories() {
  const Policy& policy = request_.policy;
  std::vector<std::string> writable = writable_paths(policy);
  // Session 19's attack review: another module's directory (a uid leased to another id) was
  // refused as "owned by uid N" alone; say whose it is, and how to run that module.
  if (root_ && request_.config.module_users) {
    for (const auto& dir : writable) {
      // The directory or one above it (the diff review: data below another module's work).
      std::string component;
      for (const auto& name : path_components(dir)) {
        component += "/" + name;
        struct stat st {};
        if (::lstat(component.c_str(), &st) != 0) break;
        if (st.st_uid != 0 && st.st_uid != module_uid_) {
          const auto holder = module_id_of_uid(user_registry_dir(), st.st_uid);
          if (holder && *holder != request_.id) {
            throw step_error(
                LaunchStep::Directories,
                fmt::format("{} belongs to module id {} (uid {}, leased to it in the user "
                            "registry); a module is given only its own directories and root's: "
                            "run that module with --id {}, or give this one a directory of its "
                            "own",
                            component, *holder, st.st_uid, *holder));
          }
        }
      }
    }
  }
  auto created =
      make_writable_dirs(writable, request_.config.writable_roots, module_uid_, module_gid_, root_);
  // Issue 12's review: a directory of its own uid that others may read or search is accepted,
  // and named (writable_dirs.hpp): a listing reaches it from another module's user.
  if (own_user_) {
    for (const auto& open : own_dirs_open_to_others(writable, module_uid_, module_gid_)) {
      request_.say("note: " + open +
                   " belongs to this module's own user and other users may read or search it "
                   "(list it): chmod go-rwx it to keep it the module's alone");
    }
  }
  if (created.empty()) return;
  directories_ = held_.push(LaunchStep::Directories,
                            [created = std::move(created)] { remove_created_dirs(created); });
}

// Egress under namespace confinement (root): the proxy's listener inside the module's own
// network namespace, which the child joins. (Port only: the listener was made before the
// plan, which names its port.) Issue 12: under module_world every other module of a root
// sandbox-run gets a namespace of its own too, holding loopback alone; the plan says which
// (Plan::own_network_namespace). Anonymous: it lives while the module's processes (or the
// descriptor released here) hold it.
void ModuleRun::make_network() {
  if (!prepared_->plan.own_network_namespace) return;
  const bool stocked = stock_ && stock_->net.valid();
  if (namespace_confinement_) {
    network_ = stocked
                   ? module_network_in(std::move(stock_->net), request_.config.proxy_host,
                                       request_.config.proxy_port)
                   : make_module_network(request_.config.proxy_host, request_.config.proxy_port);
  } else if (stocked) {
    network_.netns = std::move(stock_->net);
  } else {
    // lo up only for a filter that lets the module make inet sockets (never under net: none).
    network_ = make_loopback_network(prepared_->plan.filter.inet);
  }
  held_.push(LaunchStep::Network, [this] { network_ = ModuleNetwork{}; });
}

// Namespaces made ahead by the node's stock (namespace_stock.hpp), where this run would make
// them (root; its own namespaces, or an egress module's confinement) and the stock has a set
// of the kind it needs (loopback up where the module can use it). What is left of it at the run's
// end goes back to the stock, which closes it off this run's path. Without a set, the steps below
// make their own, as they always did.
void ModuleRun::take_stock() {
  if (!prepared_->plan.own_network_namespace) return;
  std::string why;
  stock_ =
      take_namespace_set(state_dir_, namespace_confinement_ || prepared_->plan.filter.inet, &why);
  if (!why.empty()) {
    request_.say("note: the namespace stock of " + state_dir_ + " was not used (" + why +
                 "): this run makes its own namespaces");
  }
  if (stock_) {
    held_.push(LaunchStep::Network, [this] {
      give_back_namespace_set(std::move(*stock_));
      stock_.reset();
    });
  }
}

// Its devpts instance (own mounts): the module's pty (make_terminal) is opened in it.
void ModuleRun::make_devpts() {
  if (!own_mounts_) return;
  devpts_ = stock_ && stock_->devpts.valid() ? std::move(stock_->devpts) : make_devpts_instance();
  // With the rest of the set where there is one (released after this): a devpts the child
  // never attached (the run failed before) is a detached mount, whose release waits for an RCU
  // grace period.
  held_.push(LaunchStep::Mounts, [this] {
    if (stock_) stock_->devpts = std::move(devpts_);
    devpts_.reset();
  });
}

// What the run makes the module's own: the namespaces as root (an egress module's only where
// it is confined by one; port only keeps the node's); a process group it may leave where its
// container is a leaf and no descriptor it is handed is a terminal but its own pty (0-2 are
// the module's own pty when any of them is a terminal, make_terminal); its own user where the
// node leases it one (issue 12's uid registry).
seccomp::ModuleWorld ModuleRun::module_world() const {
  bool kept_terminal = false;
  for (int fd : request_.launch.keep_fds) kept_terminal = kept_terminal || ::isatty(fd) == 1;
  // The same decision sandbox-run --explain makes (plan/module_world.hpp).
  return module_world_for(request_.config,
                          WorldFacts{.root = root_,
                                     .egress = egress_,
                                     .namespace_confinement = namespace_confinement_,
                                     .leaf = launch_.leaf.has_value(),
                                     .kept_terminal = kept_terminal,
                                     .own_user = own_user_});
}

// The proxy for this module, on the listener above. Its thread starts once the child exists
// (the child must be cloned from a process with one thread).
void ModuleRun::make_proxy() {
  if (!egress_) return;
  proxy::PeerCheck peer_check;
  if (!namespace_confinement_) {
    // The module's processes, for the port-only listener's peer check: its leaf, else its
    // process group (known once spawned; the proxy's thread starts after that). Any local
    // process can reach this port: admit the module's own connections alone.
    members_ = ModuleProcesses{launch_.leaf ? launch_.leaf->path() : std::string(), 0};
    peer_check = [this](int fd) { return peer_outside_module(fd, members_); };
  }
  // Issue 16: on a terminal, without --proxy-log, the JSON lines would land among the
  // module's own output: one line per refusal instead (docs/sandbox-run.md).
  const StderrLogForm form =
      ::isatty(STDERR_FILENO) == 1 ? StderrLogForm::Summary : StderrLogForm::Json;
  proxy_ = std::make_unique<ProxyHost>(request_.config, request_.proxy_log, "--proxy-log", form,
                                       request_.id, request_.policy, std::move(network_.listener),
                                       std::move(peer_check), [this](std::string_view line) {
                                         if (auto d = proxy_denial(line)) denials_->add(*d);
                                       });
  held_.push(LaunchStep::Proxy, [this] { proxy_.reset(); });
  launch_.after_spawn = [this](pid_t module_pid) {
    members_.process_group = module_pid;  // the child leads a process group of its own
    proxy_->start_thread();
  };
}

// On a terminal, this process becomes the supervisor half of sandbox-run: the front (the pid
// the shell knows) relays the terminal and never returns from here (terminal_front.hpp).
void ModuleRun::make_terminal() {
  auto operator_terminal = find_operator_terminal();
  if (!operator_terminal) return;
  // The slave is the module's only under a uid of its own in a devpts of its own: the shared
  // module_user (nobody) is every other such module's and the node's daemons' too, and on the
  // node's devpts the module could chmod it for every local user (session 17's review read
  // the operator's keystrokes so). /dev/tty needs no owner: its own permissions are checked.
  const std::pair<uid_t, gid_t> owner =
      root_ && own_user_ && own_mounts_
          ? std::pair(module_config_.module_uid, module_config_.module_gid)
          : std::pair(static_cast<uid_t>(-1), static_cast<gid_t>(-1));
  terminal_ =
      std::make_unique<SupervisorTerminal>(split_front(*operator_terminal, devpts_.get(), owner));
  held_.push(LaunchStep::Terminal, [this] { terminal_.reset(); });
  // The record names the supervising process (sandbox-ctl status, the liveness check of a
  // later start): after the split that is this one, not the front.
  RunRecord record = state_->record();
  record.supervisor_pid = ::getpid();
  record.supervisor_start_time = process_start_time(::getpid());
  state_->write(record);
}

void ModuleRun::say_how_it_ended(const RunResult& result) {
  // Session 20's real-programs review: an agent reading --result never learnt what these lines
  // say (noexec, the OOM killer, the process limit): each is its "notes" too.
  const auto note = [this](const std::string& line) {
    end_notes_.push_back(line);
    request_.say(line);
  };
  switch (result.end) {
    case RunEnd::LauncherFailed:
      // The launcher printed its own line, unless it died without one.
      if (result.launcher_line.find("the launcher ended") == 0) note(result.launcher_line);
      break;
    case RunEnd::VerificationFailed:
      note("verification failed: after the exec, /proc/<pid>/status shows " +
           result.verification_problem + "; the module was killed and its container torn down");
      break;
    case RunEnd::Exited: {
      // Session 16's review: a program the module wrote and then ran (126 from a shell) or
      // had ld.so load (127, "failed to map segment") fails on the noexec mount, which no
      // audit record reports: the module author got no line at all. Session 19's: cargo
      // (101), ctest (8) and CPython's tests (2) exit otherwise, so any failure after the
      // module wrote an executable file there gets the line too, naming the file.
      if ((result.module_status == 0 && !request_.report_on_success) ||
          request_.policy.exec_writable || !own_mounts_) {
        break;
      }
      std::vector<std::string> writable;
      if (prepared_) {
        for (const auto& dir : prepared_->plan.writable_dirs) writable.push_back(dir.path);
      }
      const auto written = executable_written_since(
          writable, spawned_at_, module_uid_, module_gid_,
          own_tmp_.valid() ? std::vector<HeldDirectory>{{"/tmp", own_tmp_.get()}}
                           : std::vector<HeldDirectory>{});
      const bool shell_status = result.module_status == 126 || result.module_status == 127;
      if (!shell_status && !written) break;
      // Session 20's attack review: its own /tmp is noexec too; session 21's real-programs
      // review: the walk looks there as well, through the tmpfs the launcher sent (its mount
      // namespace is gone with the module).
      const std::string places = prepared_ && prepared_->plan.mounts.own_tmp
                                     ? "work, data, temp or its own /tmp"
                                     : "work, data or temp";
      // The name is the module's choice of bytes: quoted and escaped (fmt's debug format), so
      // that it cannot read as the line's own advice.
      note("the module exited " + std::to_string(result.module_status) +
           (written ? " after writing the executable file " + fmt::format("{:?}", *written) +
                          ": if it ran or loaded that or another program it wrote in " + places +
                          ", those are mounted noexec"
                    : ": if it ran or loaded a program it wrote in " + places +
                          ", those are mounted noexec") +
           " (no refusal is recorded for it; git skips such hooks, CMake's try_run fails, "
           "cargo's build scripts, proc-macros and tests fail): \"exec_writable\": true "
           "allows it");
      break;
    }
    case RunEnd::Signaled:
      // Session 21's real-programs review: 137 with no line, where the module ignored SIGTERM
      // or sandbox-ctl killed it (the exit table names the OOM killer alone for 137).
      if (result.module_signal == SIGKILL && result.stop_signal == 0 && !result.timed_out &&
          result.oom_kills == 0) {
        note(
            "the module was killed by SIGKILL, which sandbox-run did not send: sandbox-ctl "
            "kill " +
            (request_.id.empty() ? std::string("ID") : request_.id) +
            ", the kernel's OOM killer where the leaf has no memory controller to count it, or "
            "another process of the node (or the module itself)");
      }
      break;
  }
  if (result.oom_kills > 0) {
    note("the module was killed by the OOM killer (memory.max " +
         std::to_string(limits_.memory_max.value_or(0)) + " bytes; " +
         std::to_string(result.oom_kills) + " process(es) killed)");
  }
  // Nothing else records a fork refused at pids.max (no audit record, no seccomp notice): the
  // module's own message, if it prints one, is an EAGAIN that names no limit.
  if (result.process_limit_hits.value_or(0) > 0) {
    const std::string leaf_limit =
        limits_.pids_max ? "its leaf's pids.max " + std::to_string(*limits_.pids_max) +
                               " (the node's \"pids_max\") or a limit above it"
                         : "a pids.max above its leaf";
    note("the module's fork or clone was refused " + std::to_string(*result.process_limit_hits) +
         " time(s) at " + leaf_limit + ", such as the unit's TasksMax=; no policy key raises it");
  }
  // Session 21's real-programs review: a write past its own /tmp answers ENOSPC, which
  // nothing records (Python's tempfile, sort -T /tmp, dd). Where a failing module left it
  // nearly full (by blocks or inodes), say its size and where big files belong.
  if (own_tmp_.valid() && result.exit_code != 0) {
    struct statfs fs {};
    if (::fstatfs(own_tmp_.get(), &fs) == 0 && fs.f_blocks > 0 &&
        (fs.f_bavail * 20 < fs.f_blocks || (fs.f_files > 0 && fs.f_ffree * 20 < fs.f_files))) {
      note(fmt::format(
          "its own /tmp (a tmpfs of {} bytes and {} inodes: the node's module_shm_max_bytes, or "
          "the policy's memory reservation when smaller) was {} at its end: a write past it "
          "answers ENOSPC, which no refusal records; big temporary files belong in the "
          "policy's \"temp\" (TMPDIR, on disk){}",
          static_cast<std::uint64_t>(fs.f_blocks) * static_cast<std::uint64_t>(fs.f_bsize),
          static_cast<std::uint64_t>(fs.f_files),
          fs.f_bavail * 20 < fs.f_blocks ? "full or nearly" : "out of inodes or nearly",
          request_.policy.temp ? "" : ", which this policy does not name"));
    }
  }
  own_tmp_.reset();  // the tmpfs's memory goes with it
  if (result.timed_out) {
    note("the module ran past --timeout " + seconds_text(*request_.timeout_seconds) +
         " s and was stopped");
  }
  if (result.stop_kill == RunResult::StopKill::AfterGrace) {
    note(std::string("the module did not end within --kill-after ") +
         seconds_text(request_.kill_after_seconds) + " s of " +
         (result.timed_out               ? std::string("SIGTERM (--timeout)")
          : result.stop_signal == SIGHUP ? std::string("SIGTERM (sent on for SIGHUP)")
                                         : std::string("SIG") + sigabbrev_np(result.stop_signal)) +
         " and was killed (SIGKILL to every process of its container)");
  } else if (result.stop_kill == RunResult::StopKill::SecondRequest) {
    note(
        "a second stop request killed the module at once (SIGKILL to every process of its "
        "container)");
  } else if (result.stop_kill == RunResult::StopKill::BeforeVerified &&
             result.end == RunEnd::Signaled) {
    note(
        "the stop came before the module's start was verified, and killed it at once (SIGKILL "
        "to every process of its container)");
  }
}

std::string ModuleRun::result_json(const RunResult& result) const {
  return run_result_to_json(result, request_.id, end_notes_);
}

}  // namespace oarbank
