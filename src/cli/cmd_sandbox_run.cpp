// sandbox-run [OPTIONS] POLICY.json -- ARGV...: the command line of the parent that contains
// and verifies ("Verification" and "Process container" of
// https://docs.codonic.dev/oarbank/spec/sandbox-linux; docs/sandbox-run.md). The run itself,
// what it makes and releases, is supervise/module_run.hpp's.
#include <limits.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>

#include "apply/descriptors.hpp"
#include "apply/policy_file.hpp"
#include "apply/prepared_exec.hpp"
#include "cli/commands.hpp"
#include "cli/denial_report.hpp"
#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "plan/launch_steps.hpp"
#include "plan/protected_paths.hpp"
#include "policy/module_id.hpp"
#include "supervise/module_run.hpp"
#include "supervise/run_explain.hpp"
#include "sys/error.hpp"
#include "sys/safe_open.hpp"

namespace oarbank::cli {
namespace {

constexpr const char* kCommand = "sandbox-run";

// --result is opened before anything runs (a path that cannot take the result refuses the run,
// 64) and written through that descriptor at the end: through no symbolic link, a regular file
// only (sys/safe_open.hpp), so root's write lands nowhere another user chose.
UniqueFd open_result_file(const std::string& path) {
  // 0640, as the proxy's log: its denials name what the module reached for (session 16).
  OperatorFile file = open_operator_file(path, false, 0640);
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

// `path` resolved as far as it exists (its parent directory, through symbolic links), absolute.
std::string resolved(std::string path) {
  if (!path.empty() && path[0] != '/') {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd) != nullptr) path = std::string(cwd) + "/" + path;
  }
  path = normalize_path(path);
  const auto slash = path.rfind('/');
  const std::string parent = slash == 0 ? "/" : path.substr(0, slash);
  if (char* real = ::realpath(parent.c_str(), nullptr)) {
    std::string out =
        std::string(real) + (std::string(real) == "/" ? "" : "/") + path.substr(slash + 1);
    std::free(real);
    return out;
  }
  return path;
}

// Attack review: a file written for the operator inside what the module may write (work, temp,
// data) is the module's to replace. It is opened before the run and written through that
// descriptor at the end, so a module that unlinks it and writes its own at the same name leaves
// the operator reading a result (or a proxy log) of its making: refused (64).
void refuse_inside_writable(const std::string& option, const std::string& path,
                            const Policy& policy) {
  const std::string file = resolved(path);
  for (const auto& named : writable_policy_paths(policy)) {
    const std::string role = named.what == "data path" ? "data" : named.what;
    const std::string& dir = named.forms.front();
    for (const std::string& written : path_forms(dir)) {
      const std::string form = normalize_path(written);
      if (paths_overlap(file, form) && file != form && file.starts_with(form)) {
        throw Error(ErrorKind::Usage, option + " " + path + " lies in the module's " + role +
                                          " directory " + dir +
                                          ", which the module may write: it could replace the "
                                          "file; name one outside work, temp and data");
      }
    }
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
    std::optional<Policy> policy_read;
    if (options.result_path && !options.exec.explain) {
      // Attack review (session 14): a --result inside the module's writable directories is
      // refused before root creates the file there, so the policy is read first. One that
      // cannot be read is refused once the result file is open, so that the result says so.
      std::exception_ptr unreadable;
      try {
        policy_read = load_policy_file(options.exec.policy_path);
      } catch (...) {
        unreadable = std::current_exception();
      }
      if (policy_read) refuse_inside_writable("--result", *options.result_path, *policy_read);
      result_fd = open_result_file(*options.result_path);
      if (unreadable) std::rethrow_exception(unreadable);
    }
    if (!options.exec.separator || options.exec.argv.empty()) {
      throw Error(ErrorKind::Usage,
                  "usage: no command after -- (sandbox-run [OPTIONS] POLICY.json -- ARGV...)");
    }
    if (options.exec.explain) {
      // The run's own plan, its world included (supervise/run_explain.hpp); nothing is made.
      if (options.id) {
        if (auto problem = module_id_problem(*options.id)) {
          throw Error(ErrorKind::Usage, "--id " + *options.id + ": " + *problem);
        }
      }
      const ExecArgs& exec = options.exec;
      LaunchRequest request = make_launch_request(exec.argv, exec.setenv, exec.keep_fds);
      NodeConfig config = load_node_config(exec.config_path);
      const Policy policy = load_policy_file(exec.policy_path);
      const std::string text =
          explain_module_run(std::move(request), std::move(config), policy, options.id) + "\n";
      std::fputs(text.c_str(), stdout);
      std::fflush(stdout);
      return 0;
    }
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
    Policy policy = policy_read ? std::move(*policy_read) : load_policy_file(exec.policy_path);
    if (options.proxy_log) refuse_inside_writable("--proxy-log", *options.proxy_log, policy);
    ModuleRun run(
        ModuleRunRequest{.id = id,
                         .id_generated = !options.id,
                         .policy = std::move(policy),
                         .config = std::move(config),
                         .config_path = exec.config_path,
                         .policy_path = exec.policy_path,
                         .launch = std::move(launch),
                         .timeout_seconds = options.timeout,
                         .kill_after_seconds = options.kill_after,
                         .usage = options.result_path.has_value(),
                         .proxy_log = options.proxy_log,
                         .report_on_success = options.denials,
                         .say = [](const std::string& line) { print_error(kCommand, line); }});
    const RunResult result = run.run();
    // Issue 14: what the sandbox refused, in --result and on stderr when the module failed
    // (or --denials; docs/denials.md). The result first: stderr may be shared with the module,
    // which can have broken it (session 13's attack review).
    const RunDenials* denials = run.denials();
    if (options.result_path) {
      const std::string json = run.result_json(result);
      write_result_file(result_fd.get(), *options.result_path,
                        denials != nullptr ? with_denials(json, *denials) : json);
      result_written = true;
    }
    if (denials != nullptr)
      report_denials(kCommand, *denials, result.exit_code != 0 || options.denials);
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

}  // namespace oarbank::cli
