// oarbank-agent: one binary, one sub-command per job (docs/architecture.md, "cli").
#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "policy/suggest.hpp"
#include "sys/error.hpp"

namespace oarbank::cli {
namespace {
std::string g_last_error_line;
}  // namespace

const std::string& last_error_line() { return g_last_error_line; }

void print_error(const std::string& command, const std::string& message) {
  std::string line = "oarbank-agent";
  if (!command.empty()) line += " " + command;
  line += ": ";
  for (unsigned char c : message) {
    if (c >= 0x20 && c < 0x7f) {
      line += static_cast<char>(c);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      line += escaped;
    }
  }
  g_last_error_line = line;
  line += '\n';
  std::fputs(line.c_str(), stderr);
}

int run_guarded(const std::string& command, const std::string& policy_path,
                const std::function<int()>& body) {
  try {
    return body();
  } catch (const PolicyError& e) {
    print_error(command, "invalid policy " +
                             (policy_path == "-" ? std::string("(standard input)") : policy_path) +
                             ": " + e.what());
    return exit_code_for(e.kind());
  } catch (const Error& e) {  // ConfigError, and every other kind (sys/error.hpp)
    print_error(command, e.what());
    return exit_code_for(e.kind());
  }
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::optional<std::string> unknown_option(const CLI::App& command, int argc,
                                          const char* const* argv, std::vector<std::string> known) {
  for (const auto* option : command.get_options()) {
    for (const auto& name : option->get_lnames()) known.push_back("--" + name);
  }
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (!word.starts_with("--") || word == "--") continue;
    if (auto eq = word.find('='); eq != std::string::npos) word.erase(eq);
    if (std::find(known.begin(), known.end(), word) != known.end()) continue;
    return "unknown option " + word + did_you_mean(word, known);
  }
  return std::nullopt;
}

}  // namespace oarbank::cli

int main(int argc, char** argv) {
  using namespace oarbank;
  // The launch path: the plain sandbox-exec form skips building the CLI11 parser.
  if (auto plain = cli::parse_plain_exec_args(argc, argv)) {
    try {
      return cli::run_sandbox_exec(*plain);
    } catch (const std::exception& e) {
      cli::print_error("sandbox-exec", std::string("internal error: ") + e.what());
      return exit_code_for(ErrorKind::Internal);
    }
  }
  if (auto plain = cli::parse_plain_run_args(argc, argv)) {
    try {
      return cli::run_sandbox_run(*plain);
    } catch (const std::exception& e) {
      cli::print_error("sandbox-run", std::string("internal error: ") + e.what());
      return exit_code_for(ErrorKind::Internal);
    }
  }
  CLI::App app{"oarbank-agent: runs third-party modules under Landlock, seccomp and cgroup v2",
               "oarbank-agent"};
  app.require_subcommand(1);
  app.footer(
      "oarbank-agent --version prints the version and the commit; oarbank-agent help SUB-COMMAND "
      "(or SUB-COMMAND --help) prints a sub-command's options.");
  app.set_help_all_flag("--help-all", "Print help for every sub-command");
  cli::ModuleCommand module_command;
  int cli_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      module_command.separator = true;
      module_command.argv.assign(argv + i + 1, argv + argc);
      cli_argc = i;
      break;
    }
  }
  std::map<std::string, cli::Runner> runners;
  runners["sandbox-exec"] = cli::add_sandbox_exec(app, module_command);
  runners["sandbox-run"] = cli::add_sandbox_run(app, module_command);
  runners["sandbox-ctl"] = cli::add_sandbox_ctl(app);
  runners["egress-proxy"] = cli::add_egress_proxy(app);
  runners["sandbox-report"] = cli::add_sandbox_report(app);
  runners["sandbox-check"] = cli::add_sandbox_check(app);
  runners["sandbox-probe"] = cli::add_sandbox_probe(app);
  // Issue 16: `--version`, `help [SUB]` and an unknown sub-command are answered for what they
  // are, not with CLI11's "A subcommand is required".
  if (cli_argc == 2 &&
      (std::string_view(argv[1]) == "--version" || std::string_view(argv[1]) == "-V")) {
    std::printf("oarbank-agent %s (commit %s)\n", cli::kPackageVersion, cli::kPackageCommit);
    return 0;
  }
  std::vector<std::string> sub_names;  // the ones --help shows (sandbox-probe is hidden)
  for (const auto& [name, runner] : runners) {
    if (!app.get_subcommand(name)->get_group().empty()) sub_names.push_back(name);
  }
  // Issue 16: no arguments at all is a newcomer's first try: the usage (with the sub-commands)
  // on stdout, and on stderr the one line of every usage error, saying what to type next.
  const std::string no_sub_command =
      "usage: a sub-command is required: " + cli::join(sub_names) +
      " (oarbank-agent help SUB-COMMAND for its options and examples)";
  if (cli_argc == 1) {
    std::fputs(app.help().c_str(), stdout);
    std::fflush(stdout);
    cli::print_error("", no_sub_command);
    return exit_code_for(ErrorKind::Usage);
  }
  if (cli_argc >= 2 && std::string_view(argv[1]) == "help") {
    if (cli_argc == 2) {
      std::fputs(app.help().c_str(), stdout);
      return 0;
    }
    if (cli_argc == 3 && runners.contains(argv[2])) {
      std::fputs(app.get_subcommand(argv[2])->help().c_str(), stdout);
      return 0;
    }
    cli::print_error("", std::string("usage: help takes one sub-command: ") + cli::join(sub_names) +
                             (cli_argc >= 3 ? did_you_mean(argv[2], sub_names) : ""));
    return exit_code_for(ErrorKind::Usage);
  }
  if (cli_argc >= 2 && argv[1][0] != '-' && argv[1][0] != '\0' && !runners.contains(argv[1])) {
    cli::print_error("", std::string("usage: unknown sub-command \"") + argv[1] + "\"" +
                             did_you_mean(argv[1], sub_names) +
                             " (the sub-commands: " + cli::join(sub_names) + "; see --help)");
    return exit_code_for(ErrorKind::Usage);
  }
  try {
    app.parse(cli_argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string command;
    for (const auto* sub : app.get_subcommands()) command = sub->get_name();
    // An option the (sub-)command does not know, named with the closest one it does.
    if (auto unknown = cli::unknown_option(
            command.empty() ? app : *app.get_subcommand(command), cli_argc, argv,
            command.empty() ? std::vector<std::string>{"--version"} : std::vector<std::string>{})) {
      cli::print_error(command, "usage: " + *unknown + " (see --help)");
      return exit_code_for(ErrorKind::Usage);
    }
    std::string message = command.empty() ? no_sub_command  // options alone, e.g. --config F
                                          : std::string("usage: ") + e.what() + " (see --help)";
    if ((command == "sandbox-exec" || command == "sandbox-run") && !module_command.separator) {
      message = std::string("usage: ") + cli::kNoCommand + ": " + e.what();
    }
    cli::print_error(command, message);
    return exit_code_for(ErrorKind::Usage);
  }
  for (const auto* sub : app.get_subcommands()) {
    if (module_command.separator && sub->get_name() != "sandbox-exec" &&
        sub->get_name() != "sandbox-run") {
      cli::print_error(sub->get_name(), "usage: this command takes no \"-- ARGV\" (see --help)");
      return exit_code_for(ErrorKind::Usage);
    }
    try {
      return runners.at(sub->get_name())();
    } catch (const std::exception& e) {
      cli::print_error(sub->get_name(), std::string("internal error: ") + e.what());
      return exit_code_for(ErrorKind::Internal);
    }
  }
  return exit_code_for(ErrorKind::Usage);
}
