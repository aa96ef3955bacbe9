// sandbox-run [OPTIONS] POLICY.json -- ARGV...: the parent that contains and verifies
// (sandbox-linux.md, "Verification" and "Process container"; contract.md, "Commands").
#include <fcntl.h>
#include <limits.h>
#include <sys/random.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "apply/descriptors.hpp"
#include "apply/launch.hpp"
#include "cli/commands.hpp"
#include "cli/denial_report.hpp"
#include "cli/learn.hpp"
#include "cli/prepared_exec.hpp"
#include "cli/proxy_host.hpp"
#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "plan/cgroup_limits.hpp"
#include "plan/denial_advice.hpp"
#include "plan/protected_paths.hpp"
#include "probe/probe.hpp"
#include "probe/proc_status.hpp"
#include "supervise/cgroup_leaf.hpp"
#include "supervise/module_id.hpp"
#include "supervise/module_network.hpp"
#include "supervise/peer_process.hpp"
#include "supervise/run_denials.hpp"
#include "supervise/run_state.hpp"
#include "supervise/supervisor.hpp"
#include "supervise/writable_dirs.hpp"
#include "sys/error.hpp"
#include "sys/landlock_abi.hpp"
#include "sys/safe_open.hpp"
#include "sys/text_file.hpp"

namespace oarbank::cli {
namespace {

constexpr const char* kCommand = "sandbox-run";

// What the child needs: the prepared launch, and the module's network namespace to join.
struct ChildLaunch {
  PreparedExec* prepared = nullptr;
  int netns_fd = -1;
};

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
[[noreturn]] void launch_in_child(void* context, int status_fd) {
  auto* child = static_cast<ChildLaunch*>(context);
  set_launch_status_fd(status_fd);
  if (child->netns_fd >= 0) {
    if (int err = join_network_namespace(child->netns_fd); err != 0) {
      std::string line =
          "oarbank-agent sandbox-run: step network failed: setns(the module's "
          "network namespace): " +
          errno_text(err);
      std::fprintf(stderr, "%s\n", line.c_str());
      report_launch_status(kExitSoftware, line);
      ::_exit(kExitSoftware);
    }
  }
  launch(child->prepared->plan, child->prepared->launch, "oarbank-agent sandbox-run");
}

// --result is opened before anything runs (a path that cannot take the result refuses the run,
// 64) and written through that descriptor at the end: through no symbolic link, a regular file
// only (sys/safe_open.hpp), so root's write lands nowhere another user chose.
UniqueFd open_result_file(const std::string& path) {
  OperatorFile file = open_operator_file(path, false, 0644);
  if (!file.fd.valid()) throw Error(ErrorKind::Usage, "--result " + file.problem);
  return std::move(file.fd);
}

void write_result_file(int fd, const std::string& path, const std::string& json) {
  if (fd < 0) return;
  if (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) != 0 ||
      ::write(fd, json.data(), json.size()) != static_cast<ssize_t>(json.size())) {
    print_error(kCommand, "--result " + path + ": " + errno_text(errno));
  }
}

// Filters this process already runs under (a container runtime's), from /proc/self/status.
int own_seccomp_filters() {
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
  if (!path.empty() && path[0] != '/') {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd) != nullptr) path = std::string(cwd) + "/" + path;
  }
  return path;
}

// A path as written and as the kernel resolves it (symbolic links followed as far as the
// path exists), for protected_path_problem: a link to the state directory is the directory.
std::vector<std::string> path_forms(const std::string& path) {
  std::vector<std::string> forms{path};
  std::string head = normalize_path(path), tail;
  for (;;) {
    if (char* real = ::realpath(head.c_str(), nullptr)) {
      forms.push_back(std::string(real) + tail);
      std::free(real);
      break;
    }
    if (head == "/") break;
    const auto slash = head.rfind('/');
    tail = head.substr(slash) + tail;
    head = slash == 0 ? "/" : head.substr(0, slash);
  }
  return forms;
}

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

}  // namespace

int run_sandbox_run(const RunArgs& options) {
  StepError std_error;
  // As sandbox-exec: a closed 0, 1 or 2 would otherwise be reused by our own files.
  if (!ensure_standard_descriptors(std_error)) {
    print_error(kCommand,
                "step descriptors failed: " + std_error.what + ": " + errno_text(std_error.err));
    return kExitSoftware;
  }
  std::string id;
  bool result_written = false;
  UniqueFd result_fd;
  const int code = run_guarded(kCommand, options.exec.policy_path, [&]() -> int {
    if (options.result_path && !options.exec.explain) {
      result_fd = open_result_file(*options.result_path);
    }
    if (!options.exec.separator || options.exec.argv.empty()) {
      throw Error(ErrorKind::Usage,
                  "usage: no command after -- (sandbox-run [OPTIONS] POLICY.json -- ARGV...)");
    }
    if (options.exec.explain) return run_sandbox_exec(options.exec);
    if (options.learn) return run_learn(options);
    if (options.timeout && !(*options.timeout > 0 && std::isfinite(*options.timeout))) {
      throw Error(ErrorKind::Usage, "--timeout: expected a number of seconds above 0");
    }
    if (!(options.kill_after >= 0 && std::isfinite(options.kill_after))) {
      throw Error(ErrorKind::Usage, "--kill-after: expected a number of seconds, 0 or more");
    }
    id = options.id ? *options.id : generate_module_id();
    if (auto problem = module_id_problem(id)) {
      throw Error(ErrorKind::Usage, "--id " + id + ": " + *problem);
    }
    const LaunchRequest request = make_launch_request(options.exec);
    const NodeConfig config = load_node_config(options.exec.config_path);
    const Policy policy = load_policy_file(options.exec.policy_path);

    const std::string state_dir = run_state_dir();
    // sandbox-run's own files are out of the module's reach, whatever the policy names.
    const std::vector<NamedPath> protect = {
        {"the run state directory", path_forms(state_dir)},
        {"the node configuration", path_forms(effective_config_path(options.exec.config_path))}};
    std::vector<NamedPath> named = policy_paths(policy);
    for (auto& path : named) path.forms = path_forms(path.forms.front());
    if (auto problem = protected_path_problem(named, protect)) {
      throw Error(ErrorKind::Unenforceable, "step run-state failed: " + *problem +
                                                ": a module must not reach sandbox-run's own "
                                                "files");
    }
    std::string repaired;
    open_state_dir(state_dir, true, &repaired);
    if (!repaired.empty()) {
      print_error(kCommand, "the run state directory was writable by others (" + repaired +
                                "): repaired; records written meanwhile are not trusted");
    }
    clean_stale_runs(state_dir);
    const bool root = ::geteuid() == 0;
    std::string why_not;
    const std::optional<CgroupPlace> place = find_cgroup_place(config, why_not);
    // The intent, before anything is made: a sandbox-run killed from here on leaves a record
    // that names the leaf (made or not yet), so the next start or sandbox-ctl removes it.
    RunState state = RunState::claim(
        state_dir, RunRecord{.id = id,
                             .supervisor_pid = ::getpid(),
                             .supervisor_start_time = process_start_time(::getpid()),
                             .cgroup = place ? place->parent + "/" + leaf_name_for(id) : "",
                             .netns = policy.net == NetMode::EgressAllowlist && root,
                             .started_at = static_cast<std::int64_t>(std::time(nullptr))});
    // Issue 16: an operator at a terminal learns the id (a generated one too) sandbox-ctl
    // takes; a supervisor reading stderr from a pipe gets no extra line.
    if (::isatty(STDERR_FILENO) == 1) {
      print_error(kCommand,
                  "module id " + id + " (sandbox-ctl status|freeze|thaw|kill " + id + ")");
    }

    SupervisedLaunch launch;
    launch.id = id;
    launch.timeout_seconds = options.timeout;
    launch.kill_after_seconds = options.kill_after;
    launch.expected = root ? ExecExpectation{config.module_uid, config.module_gid, true}
                           : ExecExpectation{::getuid(), ::getgid(), false};
    launch.expected.inherited_seccomp_filters = own_seccomp_filters();

    const LeafLimits limits = make_leaf_limits(policy, config);
    if (place) {
      try {
        launch.leaf = CgroupLeaf::create(*place, leaf_name_for(id), limits);
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::Busy) {
          // A cgroup of that name that is not ours: the record must not name it.
          RunRecord record = state.record();
          record.cgroup.clear();
          state.write(record);
        }
        throw;
      }
    } else {
      if (limits.required && !limits.controllers.empty()) {
        throw Error(ErrorKind::Unenforceable,
                    "step cgroup failed: the node requires hard limits, and there is no cgroup "
                    "v2 container here: " +
                        why_not);
      }
      print_error(kCommand, "no cgroup v2 container (" + why_not +
                                "): the container is a process group only");
    }

    // How an egress module is kept to the proxy (plan/capabilities.cpp, one answer with the
    // report and sandbox-check): probed once, here, for the plan too.
    KernelFeatures features = probe_kernel(config, launch_probe_scope(policy, config));
    const bool egress = policy.net == NetMode::EgressAllowlist;
    const EgressConfinement confinement = egress_confinement(features, config);
    // Port only (not root, accepted by the node): the module gets a listener of its own on
    // proxy_listen's address, on a port the kernel picks, so that the proxy knows whose
    // allowlist applies by the listener and modules run side by side. Its plan (Landlock's
    // port rule, the proxy variables) names that port. Inside a namespace of its own (root),
    // the configured port is the module's alone anyway. Refused: the plan says so (70).
    NodeConfig module_config = config;
    UniqueFd own_listener;
    if (egress && confinement == EgressConfinement::PortOnly) {
      own_listener = listen_on(config.proxy_host, 0);
      module_config.proxy_port = listening_port(own_listener.get());
    }

    std::vector<std::string> writable;
    if (policy.work) writable.push_back(*policy.work);
    writable.insert(writable.end(), policy.data.begin(), policy.data.end());
    if (policy.temp) writable.push_back(*policy.temp);
    const auto created = make_writable_dirs(writable, config.writable_roots, launch.expected.uid,
                                            launch.expected.gid, root);
    // Everything the launch can fail at softly, here in the parent: a failure is one line and
    // an exit code, with the leaf and the directories removed (unwinding).
    std::unique_ptr<PreparedExec> prepared;
    try {
      prepared = prepare_exec(request, module_config, policy, std::move(features));
    } catch (...) {
      remove_created_dirs(created);
      throw;
    }
    // Started unprivileged, the module runs as this very user: only Landlock's signal scoping
    // (ABI 6) keeps it from killing or stopping its supervisor, and the container with it.
    if (!root && (prepared->plan.landlock.scoped & LANDLOCK_SCOPE_SIGNAL) == 0) {
      remove_created_dirs(created);
      throw Error(ErrorKind::Unenforceable,
                  "step container failed: sandbox-run started unprivileged runs the module as "
                  "the same user, and without Landlock signal scoping (ABI 6; this node uses " +
                      std::to_string(prepared->plan.landlock.abi) +
                      ") the module could signal sandbox-run and leave its container; run it as "
                      "root");
    }
    // Egress: the proxy for this module, on a listener inside the module's own network
    // namespace where this node can make one (root), else on the module's own port (above).
    // Issue 14: the refusals of the run, from the filter, Landlock's audit log and the proxy.
    RunDenials denials(prepared->plan.filter,
                       LandlockAdviceContext{writable, policy.exec_writable});
    ChildLaunch child{prepared.get(), -1};
    ModuleNetwork network;
    std::unique_ptr<ProxyHost> proxy;
    // The module's processes, for the port-only listener's peer check: its leaf, else its
    // process group (known once spawned; the proxy's thread starts after that).
    ModuleProcesses members{launch.leaf ? launch.leaf->path() : std::string(), 0};
    if (egress) {
      try {
        proxy::PeerCheck peer_check;
        if (confinement == EgressConfinement::Namespace) {
          network = make_module_network(config.proxy_host, config.proxy_port);
          child.netns_fd = network.netns.get();
        } else {
          network.listener = std::move(own_listener);
          // Any local process can reach this port: admit the module's own connections alone.
          peer_check = [&members](int fd) { return peer_outside_module(fd, members); };
        }
        // Issue 16: on a terminal, without --proxy-log, the JSON lines would land among the
        // module's own output: one line per refusal instead (docs/sandbox-run.md).
        const StderrLogForm form =
            ::isatty(STDERR_FILENO) == 1 ? StderrLogForm::Summary : StderrLogForm::Json;
        proxy = std::make_unique<ProxyHost>(
            config, options.proxy_log, "--proxy-log", form, id, policy, std::move(network.listener),
            std::move(peer_check), [&denials](std::string_view line) {
              if (auto d = proxy_denial(line)) denials.add(*d);
            });
      } catch (...) {
        remove_created_dirs(created);
        throw;
      }
      launch.after_spawn = [&proxy, &members](pid_t module_pid) {
        members.process_group = module_pid;  // the child leads a process group of its own
        proxy->start_thread();
      };
    }
    launch.launcher = &launch_in_child;
    launch.launcher_context = &child;
    // Issue 14: the filter's refusals go to the supervisor, which answers and records them.
    denials.prepare(prepared->plan, config.denial_audit);
    launch.seccomp_listener = denials.seccomp_listener();
    launch.after_spawn = [&denials, then = std::move(launch.after_spawn)](pid_t module_pid) {
      denials.spawned(module_pid);
      if (then) then(module_pid);
    };

    const RunResult result = supervise(launch, state);
    denials.finish();
    switch (result.end) {
      case RunEnd::LauncherFailed:
        // The launcher printed its own line, unless it died without one.
        if (result.launcher_line.find("the launcher ended") == 0) {
          print_error(kCommand, result.launcher_line);
        }
        remove_created_dirs(created);
        break;
      case RunEnd::VerificationFailed:
        print_error(kCommand, "verification failed: after the exec, /proc/<pid>/status shows " +
                                  result.verification_problem +
                                  "; the module was killed and its container torn down");
        remove_created_dirs(created);
        break;
      case RunEnd::Exited:
      case RunEnd::Signaled:
        break;
    }
    if (result.oom_kills > 0) {
      print_error(kCommand, "the module was killed by the OOM killer (memory.max " +
                                std::to_string(limits.memory_max.value_or(0)) + " bytes; " +
                                std::to_string(result.oom_kills) + " process(es) killed)");
    }
    if (result.timed_out) {
      print_error(kCommand, "the module ran past --timeout " + seconds_text(*options.timeout) +
                                " s and was stopped");
    }
    proxy.reset();  // stops the proxy: every tunnel of the module closes with it
    report_denials(kCommand, denials, result.exit_code != 0 || options.denials);
    if (options.result_path) {
      write_result_file(result_fd.get(), *options.result_path,
                        with_denials(run_result_to_json(result, launch), denials));
      result_written = true;
    }
    state.finish();
    return result.exit_code;
  });
  // Refused before the launcher started (an invalid policy, a busy id, a node that cannot
  // enforce the policy): the result says so, with the line printed.
  if (options.result_path && !result_written && code != 0) {
    nlohmann::json j{{"id", id.empty() ? nlohmann::json(nullptr) : nlohmann::json(id)},
                     {"end", "not-started"},
                     {"exit_code", code},
                     {"error", last_error_line()}};
    write_result_file(result_fd.get(), *options.result_path, j.dump() + "\n");
  }
  return code;
}

Runner add_sandbox_run(CLI::App& app, const ModuleCommand& command) {
  auto options = std::make_shared<RunArgs>();
  auto* sub = app.add_subcommand(
      kCommand,
      "Run ARGV under sandbox-exec in its own process group and cgroup v2 leaf, verify the "
      "sandbox after the exec, wait, and tear everything down. Exits with the module's status "
      "(128+N for signal N); 64/70/71/78 as sandbox-exec; 69, 75 and 124 (--timeout) of its own.");
  // Issue 16: the whole usage line, what POLICY is, and two examples.
  sub->footer(
      "Usage:\n"
      "  oarbank-agent sandbox-run [--id ID] [--timeout DURATION] [--result FILE] [OPTIONS] "
      "POLICY.json -- ARGV...\n"
      "  POLICY.json is a file (- reads it from standard input); ARGV is the module's command.\n"
      "Examples:\n"
      "  oarbank-agent sandbox-run --id fetch-1 --timeout 10m job.json -- "
      "/srv/jobs/fetch/run.sh\n"
      "  oarbank-agent sandbox-run --result /tmp/fetch-1.json --proxy-log /tmp/proxy.log "
      "job.json -- python3 fetch.py\n");
  sub->add_option("policy", options->exec.policy_path,
                  "The policy file (the SDK's Policy as JSON); - reads it from standard input")
      ->required();
  sub->add_option(
      "--config", options->exec.config_path,
      "Node configuration file (default: $OARBANK_AGENT_CONFIG, else /etc/oarbank/agent.json)");
  sub->add_option("--id", options->id,
                  "The module's id: names its cgroup leaf, for sandbox-ctl (default: generated)");
  // Durations as timeout(1) takes them: seconds, or with a unit s, m, h, d (exec_args.hpp).
  const auto duration = [](const std::string& text) -> std::string {
    if (auto seconds = parse_duration(text)) {
      char buffer[64];
      auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, *seconds);
      return ec == std::errc() ? std::string(buffer, end) : text;
    }
    throw CLI::ValidationError(
        "expected a duration: seconds, or with a unit s, m, h or d (10s, 2m, 1h)");
  };
  sub->add_option("--timeout", options->timeout,
                  "Stop the module after DURATION (10, 10s, 2m, 1h, 1d; SIGTERM, then SIGKILL "
                  "after --kill-after); exit 124")
      ->transform(duration);
  sub->add_option("--kill-after", options->kill_after,
                  "DURATION from SIGTERM to SIGKILL when stopping the module (default 10s)")
      ->transform(duration);
  sub->add_option("--result", options->result_path,
                  "Write how the run ended as JSON to FILE (launcher failure, verification "
                  "failure, exit, signal, timeout, OOM kill)");
  sub->add_option("--setenv", options->exec.setenv, "Add NAME=VALUE to the module's environment")
      ->allow_extra_args(false);
  sub->add_option("--keep-fd", options->exec.keep_fds,
                  "Pass this open descriptor to the module (repeatable)")
      ->allow_extra_args(false);
  sub->add_option("--proxy-log", options->proxy_log,
                  "Append the egress proxy's JSON log lines to FILE (default: stderr; on a "
                  "terminal, one line per refusal instead)");
  sub->add_flag("--denials", options->denials,
                "Print what the sandbox refused the module on stderr even when it succeeds "
                "(always printed when it fails)");
  sub->add_option("--learn", options->learn,
                  "Run the module up to N times, widening a proposed policy by what was refused "
                  "and can be granted; print the proposal (the policy file is not changed)");
  sub->add_flag("--explain", options->exec.explain,
                "Print the compiled plan as JSON and run nothing");
  return [options, &command] {
    options->exec.separator = command.separator;
    options->exec.argv = command.argv;
    return run_sandbox_run(*options);
  };
}

}  // namespace oarbank::cli
