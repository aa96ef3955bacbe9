// oarbank-agent: one binary, one sub-command per job (contract.md, "Commands").
#include <cstdio>
#include <exception>
#include <map>

#include "cli/commands.hpp"
#include "sys/error.hpp"

namespace oarbank::cli {

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
  line += '\n';
  std::fputs(line.c_str(), stderr);
}

}  // namespace oarbank::cli

int main(int argc, char** argv) {
  using namespace oarbank;
  CLI::App app{"oarbank-agent: runs third-party modules under Landlock, seccomp and cgroup v2"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Print help for every sub-command");
  std::map<std::string, cli::Runner> runners;
  runners["sandbox-exec"] = cli::add_sandbox_exec(app);
  runners["sandbox-report"] = cli::add_sandbox_report(app);
  runners["sandbox-check"] = cli::add_sandbox_check(app);
  runners["sandbox-probe"] = cli::add_sandbox_probe(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string command;
    for (const auto* sub : app.get_subcommands()) command = sub->get_name();
    cli::print_error(command, std::string("usage: ") + e.what() + " (see --help)");
    return kExitUsage;
  }
  for (const auto* sub : app.get_subcommands()) {
    try {
      return runners.at(sub->get_name())();
    } catch (const std::exception& e) {
      cli::print_error(sub->get_name(), std::string("internal error: ") + e.what());
      return kExitSoftware;
    }
  }
  return kExitUsage;
}
