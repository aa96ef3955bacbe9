// sandbox-run [OPTIONS] POLICY.json -- ARGV...: the command line of the parent that contains
// and verifies ("Verification" and "Process container" of
// https://docs.codonic.dev/oarbank/spec/sandbox-linux; docs/sandbox-run.md). The run itself,
// what it makes and releases, is supervise/module_run.hpp's.
#include <unistd.h>

#include <charconv>
#include <cmath>

#include "apply/descriptors.hpp"
#include "apply/prepared_exec.hpp"
#include "cli/commands.hpp"
#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "supervise/module_id.hpp"
#include "supervise/module_run.hpp"
#include "plan/launch_steps.hpp"
#include "sys/error.hpp"
#include "sys/safe_open.hpp"

namespace oarbank::cli {
namespace {

constexpr const char* kCommand = "sandbox-run";

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

}  // namespace

int run_sandbox_run(const RunArgs& options) {
  StepError std_error;
  // As sandbox-exec: a closed 0, 1 or 2 would otherwise be reused by our own files.
  if (!ensure_standard_descriptors(std_error)) {
    print_error(kCommand, step_failed_message(LaunchStep::Descriptors, std_error.what) + ": " +
                              errno_text(std_error.err));
    return exit_code_for(ErrorKind::StepFailed);
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
    const ExecArgs& exec = options.exec;
    LaunchRequest launch = make_launch_request(exec.argv, exec.setenv, exec.keep_fds);
    NodeConfig config = load_node_config(exec.config_path);
    ModuleRun run(
        ModuleRunRequest{.id = id,
                         .policy = load_policy_file(exec.policy_path),
                         .config = std::move(config),
                         .config_path = exec.config_path,
                         .launch = std::move(launch),
                         .timeout_seconds = options.timeout,
                         .kill_after_seconds = options.kill_after,
                         .proxy_log = options.proxy_log,
                         .say = [](const std::string& line) { print_error(kCommand, line); }});
    const RunResult result = run.run();
    if (options.result_path) {
      write_result_file(result_fd.get(), *options.result_path, run.result_json(result));
      result_written = true;
    }
    run.finish();
    return result.exit_code;
  });
  // Refused before the launcher started (an invalid policy, a busy id, a node that cannot
  // enforce the policy): the result says so, with the line printed.
  if (options.result_path && !result_written && code != 0) {
    write_result_file(result_fd.get(), *options.result_path,
                      not_started_result_json(id, code, last_error_line()));
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
  sub->add_flag("--explain", options->exec.explain,
                "Print the compiled plan as JSON and run nothing");
  return [options, &command] {
    options->exec.separator = command.separator;
    options->exec.argv = command.argv;
    return run_sandbox_run(*options);
  };
}

}  // namespace oarbank::cli
