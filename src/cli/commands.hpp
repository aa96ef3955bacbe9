#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/exec_args.hpp"

namespace oarbank::cli {

// Each sub-command registers its options and returns the function main() runs when it was
// chosen; that function returns the exit code.
using Runner = std::function<int()>;

// What follows the first "--" on the command line: the module's command. main() splits it off
// before CLI11 parses the rest, so no word of the module's command is ever read as one of the
// agent's options (`sandbox-exec P.json prog --explain` is a usage error, not an --explain).
struct ModuleCommand {
  bool separator = false;  // a "--" was given
  std::vector<std::string> argv;
};

Runner add_sandbox_exec(CLI::App& app, const ModuleCommand& command);
// The launcher itself, for both the CLI11 path and main()'s hand-parsed fast path.
int run_sandbox_exec(const ExecArgs& args);
inline constexpr const char* kNoCommand =
    "no command after -- (sandbox-exec [OPTIONS] POLICY.json -- ARGV...)";
Runner add_sandbox_run(CLI::App& app, const ModuleCommand& command);
// sandbox-run itself, for both the CLI11 path and main()'s fast path.
int run_sandbox_run(const RunArgs& args);
Runner add_sandbox_ctl(CLI::App& app);
Runner add_egress_proxy(CLI::App& app);
Runner add_sandbox_report(CLI::App& app);
Runner add_sandbox_check(CLI::App& app);
// Hidden: the operations sandbox-report --verify runs inside the sandbox.
Runner add_sandbox_probe(CLI::App& app);

// --version: the package's version and the commit it was built from (generated at build
// time by cmake/version.cmake).
extern const char* const kPackageVersion;
extern const char* const kPackageCommit;

// "a, b, c".
std::string join(const std::vector<std::string>& names);
// The first "--word" on the command line (argv[1..argc)) that `command` has no option for
// (nor `known`, names main() answers itself), as "unknown option --word", with "; did you
// mean \"--other\"?" when one is close; else nothing.
std::optional<std::string> unknown_option(const CLI::App& command, int argc,
                                          const char* const* argv,
                                          std::vector<std::string> known = {});

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
