// sandbox-exec [OPTIONS] POLICY.json -- ARGV...: the launcher of sandbox-linux.md.
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "apply/descriptors.hpp"
#include "apply/egress_relay.hpp"
#include "apply/launch.hpp"
#include "cli/commands.hpp"
#include "cli/prepared_exec.hpp"
#include "config/node_config.hpp"
#include "plan/plan.hpp"
#include "plan/plan_json.hpp"
#include "probe/path_facts.hpp"
#include "probe/probe.hpp"
#include "sys/error.hpp"

namespace oarbank::cli {
namespace {

constexpr const char* kCommand = "sandbox-exec";

}  // namespace

int run_sandbox_exec(const ExecArgs& options) {
  if (options.status_fd) {
    // Only a descriptor the supervisor opened for us (3 and up, open): never 0, 1 or 2.
    if (*options.status_fd < 3 || !descriptor_is_open(*options.status_fd)) {
      print_error(kCommand, "usage: --status-fd " + std::to_string(*options.status_fd) +
                                ": not an open descriptor above 2");
      return kExitUsage;
    }
    set_launch_status_fd(*options.status_fd);
  }
  StepError std_error;
  // Before anything is opened: a closed 0, 1 or 2 would otherwise be reused by our own files.
  if (!ensure_standard_descriptors(std_error)) {
    print_error(kCommand,
                "step descriptors failed: " + std_error.what + ": " + errno_text(std_error.err));
    report_launch_status(kExitSoftware, "step descriptors failed");
    return kExitSoftware;
  }
  const int code = run_guarded(kCommand, options.policy_path, [&]() -> int {
    if (!options.separator) {
      throw Error(ErrorKind::Usage, std::string("usage: ") + kNoCommand);
    }
    if (options.argv.empty()) throw Error(ErrorKind::Usage, std::string("usage: ") + kNoCommand);
    const LaunchRequest request = make_launch_request(options);
    const NodeConfig config = load_node_config(options.config_path);
    const Policy policy = load_policy_file(options.policy_path);
    // Probe only what this policy's rows depend on: the launch path stays short.
    auto prepared = prepare_exec(request, config, policy, options.explain);
    if (options.explain) {
      std::cout << explain_plan_text(prepared->plan, prepared->policy, prepared->features,
                                     prepared->config)
                << std::endl;
      return 0;
    }
    // Root: the module's own network namespace, the proxy reachable in it through a relay
    // (contract.md, "Egress only through the proxy"). Unprivileged, the plan was refused
    // unless the node accepts port-only confinement, and then Landlock's port rule is all.
    if (prepared->policy.net == NetMode::EgressAllowlist &&
        egress_confinement(prepared->features, prepared->config) == EgressConfinement::Namespace) {
      start_egress_relay(
          RelaySettings{.proxy_host = prepared->config.proxy_host,
                        .proxy_port = prepared->config.proxy_port,
                        .uid = prepared->config.module_uid,
                        .gid = prepared->config.module_gid,
                        .max_connections = prepared->config.proxy_max_tunnels_per_module});
    }
    launch(prepared->plan, prepared->launch, "oarbank-agent sandbox-exec");
  });
  // Only a failure returns here (a launch execs or _exits): tell the supervisor which.
  if (code != 0) report_launch_status(code, last_error_line());
  return code;
}

Runner add_sandbox_exec(CLI::App& app, const ModuleCommand& command) {
  auto options = std::make_shared<ExecArgs>();
  auto* sub =
      app.add_subcommand(kCommand,
                         "Apply the policy to this process (no_new_privs, Landlock, seccomp) "
                         "and exec ARGV. Exit 64 usage or invalid policy, 70 a step cannot be "
                         "applied in full, 71 the exec failed.");
  // Issue 16: the whole usage line, what POLICY is, and two examples.
  sub->footer(
      "Usage:\n"
      "  oarbank-agent sandbox-exec [--config FILE] [--setenv NAME=VALUE]... [--keep-fd N]... "
      "[--explain] POLICY.json -- ARGV...\n"
      "  POLICY.json is a file (- reads it from standard input); ARGV is the module's command.\n"
      "Examples:\n"
      "  oarbank-agent sandbox-exec job.json -- /srv/jobs/fetch/run.sh --once\n"
      "  oarbank-agent sandbox-exec --explain --setenv LOG=debug job.json -- python3 fetch.py\n");
  sub->add_option("policy", options->policy_path,
                  "The policy file (the SDK's Policy as JSON); - reads it from standard input")
      ->required();
  sub->add_option(
      "--config", options->config_path,
      "Node configuration file (default: $OARBANK_AGENT_CONFIG, else /etc/oarbank/agent.json)");
  sub->add_option("--setenv", options->setenv, "Add NAME=VALUE to the module's environment")
      ->allow_extra_args(false);
  sub->add_option("--keep-fd", options->keep_fds,
                  "Pass this open descriptor to the module (repeatable)")
      ->allow_extra_args(false);
  sub->add_flag("--explain", options->explain, "Print the compiled plan as JSON and run nothing");
  // sandbox-run's status channel: not for people, so not in --help.
  sub->add_option("--status-fd", options->status_fd)->group("");
  return [options, &command] {
    options->separator = command.separator;
    options->argv = command.argv;
    return run_sandbox_exec(*options);
  };
}

}  // namespace oarbank::cli
