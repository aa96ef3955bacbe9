#pragma once

// The sub-commands as plain functions on plain structs. No CLI11 here: only
// src/cli/command_line.cpp includes it (it declares every command's options), so the launch
// binary (src/cli/main.cpp) links none of it and each cmd_*.cpp compiles without it.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/exec_args.hpp"

namespace oarbank::cli {

// The launcher itself, for both the CLI11 path and main()'s hand-parsed fast path.
int run_sandbox_exec(const ExecArgs& args);
inline constexpr const char* kNoCommand =
    "no command after -- (sandbox-exec [OPTIONS] POLICY.json -- ARGV...)";
// sandbox-run itself, for both the CLI11 path and main()'s fast path.
int run_sandbox_run(const RunArgs& args);

struct CtlArgs {
  std::string action;  // freeze, thaw, kill, status, list, leases or reclaim
  std::string id;
  std::optional<std::string> config_path;  // leases, reclaim: module_users.reclaim_after_days
};
int run_sandbox_ctl(const CtlArgs& args);

struct StockArgs {
  std::string sets = "2";  // ready sets of each kind, as given (checked by run_sandbox_stock)
  bool verbose = false;
};
int run_sandbox_stock(const StockArgs& args);

struct ProxyArgs {
  std::string policy_path;
  std::optional<std::string> config_path;
  std::string id = "module";
  std::optional<std::string> listen;
  std::optional<std::string> log_path;
};
int run_egress_proxy(const ProxyArgs& args);

struct ReportArgs {
  std::optional<std::string> config_path;
  bool json = false;
  std::string format = "table";  // table, json or nfd
  bool verify = false;
};
int run_sandbox_report(const ReportArgs& args);

struct CheckArgs {
  std::string policy_path;
  std::optional<std::string> config_path;
  // Issue 12: the module id whose leased user judges existing writable directories (root,
  // module_users); none: module_user.
  std::optional<std::string> id;
};
int run_sandbox_check(const CheckArgs& args);

// Hidden: the operations sandbox-report --verify runs inside the sandbox. Leaves with _exit.
[[noreturn]] void run_sandbox_probe(const std::vector<std::string>& args);

// --version: the package's version and the commit it was built from (generated at build
// time by cmake/version.cmake).
extern const char* const kPackageVersion;
extern const char* const kPackageCommit;

// "a, b, c".
std::string join(const std::vector<std::string>& names);

// Prints "oarbank-agent COMMAND: MESSAGE" as one line of printable ASCII: a hostile policy
// cannot put a newline or a terminal escape sequence on the operator's screen.
void print_error(const std::string& command, const std::string& message);
// The last line print_error wrote (without its newline), for sandbox-exec's status channel.
const std::string& last_error_line();

// Runs a command's body and maps what it throws to one line on stderr and an exit code: every
// Error by its kind through exit_code_for (sys/error.hpp), a PolicyError's line naming
// `policy_path`. Only here, and in main(), are thrown errors turned into exit codes.
int run_guarded(const std::string& command, const std::string& policy_path,
                const std::function<int()>& body);

}  // namespace oarbank::cli
