// sandbox-exec [OPTIONS] POLICY.json -- ARGV...: the launcher ("Launch" of
// https://docs.codonic.dev/oarbank/spec/sandbox-linux; docs/launcher.md).
#include <cstdio>
#include <optional>

#include "apply/before_launch.hpp"
#include "apply/descriptors.hpp"
#include "apply/launch.hpp"
#include "apply/policy_file.hpp"
#include "apply/prepared_exec.hpp"
#include "cli/commands.hpp"
#include "config/node_config.hpp"
#include "plan/launch_steps.hpp"
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
      return exit_code_for(ErrorKind::Usage);
    }
    set_launch_status_fd(*options.status_fd);
  }
  StepError std_error;
  // Before anything is opened: a closed 0, 1 or 2 would otherwise be reused by our own files.
  if (!ensure_standard_descriptors(std_error)) {
    print_error(kCommand, step_failed_message(LaunchStep::Descriptors, std_error.what) + ": " +
                              errno_text(std_error.err));
    report_launch_status(exit_code_for(ErrorKind::StepFailed),
                         "step " + std::string(step_name(LaunchStep::Descriptors)) + " failed");
    return exit_code_for(ErrorKind::StepFailed);
  }
  const int code = run_guarded(kCommand, options.policy_path, [&]() -> int {
    if (!options.separator) {
      throw Error(ErrorKind::Usage, std::string("usage: ") + kNoCommand);
    }
    if (options.argv.empty()) throw Error(ErrorKind::Usage, std::string("usage: ") + kNoCommand);
    const LaunchRequest request =
        make_launch_request(options.argv, options.setenv, options.keep_fds);
    const NodeConfig config = load_node_config(options.config_path);
    const Policy policy = load_policy_file(options.policy_path);
    // As sandbox-run: a policy the module could rewrite is not read for its next run. Started
    // by the module's own user, the file it wrote is that user's, which the trusted-input check
    // accepts; started as root, a launch that reads its policy from there is refused the same.
    if (auto problem = policy_file_inside_writable(options.policy_path, policy)) {
      throw Error(ErrorKind::Unenforceable, step_failed_message(LaunchStep::Directories, *problem) +
                                                ": " + kPolicyFileInsideWritableWhy);
    }
    // Probe only what this policy's rows depend on: the launch path stays short.
    auto prepared = prepare_exec(request, config, policy, options.explain);
    if (options.explain) {
      // stdio, not <iostream>: this file is in the launch binary, which runs no iostream
      // static constructor (docs/performance.md).
      const std::string text = explain_plan_text(prepared->plan, prepared->policy,
                                                 prepared->features, prepared->config) +
                               "\n";
      std::fputs(text.c_str(), stdout);
      std::fflush(stdout);
      return 0;
    }
    // What the mechanisms make before the launcher's steps (apply/before_launch.hpp: an
    // egress module's own network namespace and its relay to the proxy, as root).
    make_before_launch(*prepared);
    launch(prepared->plan, prepared->launch, "oarbank-agent sandbox-exec");
  });
  // Only a failure returns here (a launch execs or _exits): tell the supervisor which.
  if (code != 0) report_launch_status(code, last_error_line());
  return code;
}

}  // namespace oarbank::cli
