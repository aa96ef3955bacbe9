// The whole command line, parsed with CLI11: every sub-command's options, help, --version and
// the error lines of a malformed command line (contract.md, "Commands"). The only file that
// includes CLI11: its headers cost about 7 s of compile time per file, and they include
// <iostream>, whose static constructor the launch binary must not run (docs/performance.md).
// The sub-commands themselves are plain functions on plain structs (cli/commands.hpp).
#include "cli/command_line.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "cli/learn.hpp"
#include "policy/suggest.hpp"
#include "sys/error.hpp"

namespace oarbank::cli {
namespace {

// The function run_command_line runs when its sub-command was chosen; it returns the exit code.
using Runner = std::function<int()>;

// What follows the first "--" on the command line: the module's command. It is split off
// before CLI11 parses the rest, so no word of the module's command is ever read as one of the
// agent's options (`sandbox-exec P.json prog --explain` is a usage error, not an --explain).
struct ModuleCommand {
  bool separator = false;  // a "--" was given
  std::vector<std::string> argv;
};

// The first "--word" on the command line (argv[1..argc)) that `command` has no option for
// (nor `known`, names run_command_line answers itself), as "unknown option --word", with
// "; did you mean \"--other\"?" when one is close; else nothing.
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

Runner add_sandbox_exec(CLI::App& app, const ModuleCommand& command) {
  auto options = std::make_shared<ExecArgs>();
  auto* sub =
      app.add_subcommand("sandbox-exec",
                         "Apply the policy to this process (no_new_privs, Landlock, seccomp) "
                         "and exec ARGV. Exit 64 usage or invalid policy, 70 a step cannot be "
                         "applied in full, 71 the exec failed.");
  // Issue 16: the whole usage line, what POLICY is, and two examples.
  sub->footer(
      "Usage:\n"
      "  oarbank-agent sandbox-exec [--config FILE] [--setenv NAME[=VALUE]]... [--keep-fd N]... "
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
  sub->add_option("--setenv", options->setenv,
                  "Add NAME=VALUE to the module's environment (NAME alone: its value in this "
                  "environment, kept out of the command line other users can read)")
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

Runner add_sandbox_run(CLI::App& app, const ModuleCommand& command) {
  auto options = std::make_shared<RunArgs>();
  auto* sub = app.add_subcommand(
      "sandbox-run",
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
  sub->add_option("--setenv", options->exec.setenv,
                  "Add NAME=VALUE to the module's environment (NAME alone: its value in this "
                  "environment, kept out of the command line other users can read)")
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
    // --learn runs sandbox-run again as a child per trial (cli/learn.hpp): not on the launch
    // path, so it lives in this binary only.
    if (options->learn && !options->exec.explain) {
      return run_guarded("sandbox-run", options->exec.policy_path,
                         [&] { return run_learn(*options); });
    }
    return run_sandbox_run(*options);
  };
}

Runner add_sandbox_ctl(CLI::App& app) {
  auto options = std::make_shared<CtlArgs>();
  auto* sub = app.add_subcommand(
      "sandbox-ctl",
      "Act on a module that sandbox-run runs, by its id: freeze, thaw, kill (its whole cgroup "
      "leaf, else its process group), status (JSON); list: every running module (id, pid, "
      "container, age, state). Exit 69 when no such module runs. leases: the module users "
      "sandbox-run leased (id, uid, last run, whether reclaimable); reclaim ID: give back the "
      "uid of an id not run for module_users.reclaim_after_days, once no file of its uid is left "
      "in its directories.");
  // Issue 16: the whole usage line, what POLICY is, and two examples.
  sub->footer(
      "Usage:\n"
      "  oarbank-agent sandbox-ctl freeze|thaw|kill|status ID\n"
      "  oarbank-agent sandbox-ctl list\n"
      "  oarbank-agent sandbox-ctl leases|reclaim ID [--config FILE]\n"
      "Examples:\n"
      "  oarbank-agent sandbox-ctl list\n"
      "  oarbank-agent sandbox-ctl freeze fetch-1\n");
  sub->add_option("action", options->action, "freeze, thaw, kill, status, list, leases or reclaim")
      ->required()
      ->check(CLI::Validator(
          [](std::string& action) -> std::string {
            static const std::set<std::string> kActions = {"freeze", "thaw",   "kill",   "status",
                                                           "list",   "leases", "reclaim"};
            if (kActions.contains(action)) return "";
            // What an operator types first (session 16's review): name the action that does it.
            if (action == "stop" || action == "terminate" || action == "rm") {
              return action +
                     " is no action: kill ID stops the module (its whole cgroup leaf, "
                     "else its process group)";
            }
            return action + " not in {freeze,thaw,kill,status,list,leases,reclaim}";
          },
          "ACTION"));
  sub->add_option("id", options->id, "The module's id (sandbox-run --id); none for list");
  sub->add_option("--config", options->config_path,
                  "Node configuration for leases and reclaim (default: as sandbox-run finds it)");
  return [options] { return run_sandbox_ctl(*options); };
}

Runner add_sandbox_stock(CLI::App& app) {
  auto options = std::make_shared<StockArgs>();
  auto* sub = app.add_subcommand(
      "sandbox-stock",
      "The node's namespace stock (root): keeps network and IPC namespaces, their mqueue and a "
      "devpts instance made ahead, each handed to one root sandbox-run, which then makes none "
      "on its start path. Runs until SIGTERM; sandbox-run works the same without it.");
  sub->footer(
      "Usage:\n"
      "  oarbank-agent sandbox-stock [--sets N]\n"
      "Example (systemd runs it as oarbank-sandbox-stock.service):\n"
      "  oarbank-agent sandbox-stock --sets 4\n");
  sub->add_option("--sets", options->sets,
                  "Sets kept ready of each kind (loopback up, down), 1 to 64 (default 2)");
  sub->add_flag("--verbose", options->verbose,
                "A line for each set made, taken (its network namespace's inode, the run's "
                "pid) and given back");
  return [options] { return run_sandbox_stock(*options); };
}

Runner add_egress_proxy(CLI::App& app) {
  auto options = std::make_shared<ProxyArgs>();
  auto* sub = app.add_subcommand(
      "egress-proxy",
      "Run the agent's egress proxy for one module's policy (its egress list) on the node's "
      "proxy_listen, until SIGTERM or SIGINT: for a module started by sandbox-exec alone. "
      "sandbox-run hosts the same proxy itself.");
  // Issue 16: the whole usage line, what POLICY is, and two examples.
  sub->footer(
      "Usage:\n"
      "  oarbank-agent egress-proxy [--config FILE] [--id ID] [--listen IP:PORT] [--log FILE] "
      "POLICY.json\n"
      "  POLICY.json is a file (- reads it from standard input).\n"
      "Examples:\n"
      "  oarbank-agent egress-proxy job.json\n"
      "  oarbank-agent egress-proxy --listen 127.0.0.1:3128 --log /var/log/oarbank/fetch-1.log "
      "job.json\n");
  sub->add_option("policy", options->policy_path,
                  "The module's policy file (its egress list); - reads it from standard input")
      ->required();
  sub->add_option("--config", options->config_path,
                  "Node configuration file (default: $OARBANK_AGENT_CONFIG, else "
                  "/etc/oarbank/agent.json)");
  sub->add_option("--id", options->id, "The module's id, in the log lines (default: module)");
  sub->add_option("--listen", options->listen,
                  "IP:PORT to listen on (default: the configuration's proxy_listen)");
  sub->add_option("--log", options->log_path,
                  "Append the JSON log lines to FILE (default: stderr)");
  return [options] { return run_egress_proxy(*options); };
}

Runner add_sandbox_report(CLI::App& app) {
  auto options = std::make_shared<ReportArgs>();
  auto* sub =
      app.add_subcommand("sandbox-report",
                         "Print this node's enforcement report, computed by probing the running "
                         "kernel and cgroup setup. Exit 0 (70 when --verify catches a row that "
                         "is not enforced).");
  // Issue 16: the whole usage line, what POLICY is, and two examples.
  sub->footer(
      "Usage:\n"
      "  oarbank-agent sandbox-report [--config FILE] [--json | --format nfd] [--verify]\n"
      "Examples:\n"
      "  oarbank-agent sandbox-report\n"
      "  oarbank-agent sandbox-report --json --verify\n");
  sub->add_option("--config", options->config_path, "Node configuration file");
  sub->add_flag("--json", options->json, "Same as --format json");
  sub->add_option(
         "--format", options->format,
         "table (default), json, or nfd (a Kubernetes Node Feature Discovery feature file)")
      ->check(CLI::IsMember({"table", "json", "nfd"}));
  sub->add_flag("--verify", options->verify,
                "Prove each enforced row by launching probes under the real launcher that try the "
                "forbidden thing");
  return [options] { return run_sandbox_report(*options); };
}

Runner add_sandbox_check(CLI::App& app) {
  auto options = std::make_shared<CheckArgs>();
  auto* sub =
      app.add_subcommand("sandbox-check",
                         "Can this node run this policy? Exit 0 yes, 70 no (naming each missing "
                         "capability), 64 invalid policy.");
  // Issue 16: the whole usage line, what POLICY is, and two examples.
  sub->footer(
      "Usage:\n"
      "  oarbank-agent sandbox-check [--config FILE] [--id ID] POLICY.json\n"
      "  POLICY.json is a file (- reads it from standard input).\n"
      "Examples:\n"
      "  oarbank-agent sandbox-check job.json\n"
      "  oarbank-agent sandbox-check --config /etc/oarbank/agent.json - < job.json\n");
  sub->add_option("policy", options->policy_path,
                  "The policy file (the SDK's Policy as JSON); - reads it from standard input")
      ->required();
  sub->add_option("--config", options->config_path, "Node configuration file");
  sub->add_option("--id", options->id,
                  "The module id sandbox-run will use: its leased user (module_users) judges "
                  "the writable directories that exist");
  return [options] { return run_sandbox_check(*options); };
}

Runner add_sandbox_probe(CLI::App& app) {
  auto args = std::make_shared<std::vector<std::string>>();
  auto* sub = app.add_subcommand("sandbox-probe", "");  // empty description: hidden from --help
  sub->group("");
  sub->add_option("args", *args)->required();
  // It runs inside the sandbox: it leaves with _exit, so nothing at exit (a sanitizer's leak
  // check, which needs ptrace) meets the filter.
  return [args]() -> int { run_sandbox_probe(*args); };
}

}  // namespace

int run_command_line(int argc, char** argv) {
  CLI::App app{"oarbank-agent: runs third-party modules under Landlock, seccomp and cgroup v2",
               "oarbank-agent"};
  app.require_subcommand(1);
  app.footer(
      "oarbank-agent --version prints the version and the commit; oarbank-agent help SUB-COMMAND "
      "(or SUB-COMMAND --help) prints a sub-command's options.");
  app.set_help_all_flag("--help-all", "Print help for every sub-command");
  ModuleCommand module_command;
  int cli_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      module_command.separator = true;
      module_command.argv.assign(argv + i + 1, argv + argc);
      cli_argc = i;
      break;
    }
  }
  std::map<std::string, Runner> runners;
  runners["sandbox-exec"] = add_sandbox_exec(app, module_command);
  runners["sandbox-run"] = add_sandbox_run(app, module_command);
  runners["sandbox-ctl"] = add_sandbox_ctl(app);
  runners["sandbox-stock"] = add_sandbox_stock(app);
  runners["egress-proxy"] = add_egress_proxy(app);
  runners["sandbox-report"] = add_sandbox_report(app);
  runners["sandbox-check"] = add_sandbox_check(app);
  runners["sandbox-probe"] = add_sandbox_probe(app);
  // Issue 16: `--version`, `help [SUB]` and an unknown sub-command are answered for what they
  // are, not with CLI11's "A subcommand is required".
  if (cli_argc == 2 &&
      (std::string_view(argv[1]) == "--version" || std::string_view(argv[1]) == "-V")) {
    std::printf("oarbank-agent %s (commit %s)\n", kPackageVersion, kPackageCommit);
    return 0;
  }
  std::vector<std::string> sub_names;  // the ones --help shows (sandbox-probe is hidden)
  for (const auto& [name, runner] : runners) {
    if (!app.get_subcommand(name)->get_group().empty()) sub_names.push_back(name);
  }
  // Issue 16: no arguments at all is a newcomer's first try: the usage (with the sub-commands)
  // on stdout, and on stderr the one line of every usage error, saying what to type next.
  const std::string no_sub_command =
      "usage: a sub-command is required: " + join(sub_names) +
      " (oarbank-agent help SUB-COMMAND for its options and examples)";
  if (cli_argc == 1) {
    std::fputs(app.help().c_str(), stdout);
    std::fflush(stdout);
    print_error("", no_sub_command);
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
    print_error("", std::string("usage: help takes one sub-command: ") + join(sub_names) +
                        (cli_argc >= 3 ? did_you_mean(argv[2], sub_names) : ""));
    return exit_code_for(ErrorKind::Usage);
  }
  if (cli_argc >= 2 && argv[1][0] != '-' && argv[1][0] != '\0' && !runners.contains(argv[1])) {
    print_error("", std::string("usage: unknown sub-command \"") + argv[1] + "\"" +
                        did_you_mean(argv[1], sub_names) +
                        " (the sub-commands: " + join(sub_names) + "; see --help)");
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
    if (auto unknown = unknown_option(
            command.empty() ? app : *app.get_subcommand(command), cli_argc, argv,
            command.empty() ? std::vector<std::string>{"--version"} : std::vector<std::string>{})) {
      print_error(command, "usage: " + *unknown + " (see --help)");
      return exit_code_for(ErrorKind::Usage);
    }
    std::string message = command.empty() ? no_sub_command  // options alone, e.g. --config F
                                          : std::string("usage: ") + e.what() + " (see --help)";
    if ((command == "sandbox-exec" || command == "sandbox-run") && !module_command.separator) {
      message = std::string("usage: ") + kNoCommand + ": " + e.what();
    }
    print_error(command, message);
    return exit_code_for(ErrorKind::Usage);
  }
  for (const auto* sub : app.get_subcommands()) {
    if (module_command.separator && sub->get_name() != "sandbox-exec" &&
        sub->get_name() != "sandbox-run") {
      print_error(sub->get_name(), "usage: this command takes no \"-- ARGV\" (see --help)");
      return exit_code_for(ErrorKind::Usage);
    }
    try {
      return runners.at(sub->get_name())();
    } catch (const std::exception& e) {
      print_error(sub->get_name(), std::string("internal error: ") + e.what());
      return exit_code_for(ErrorKind::Internal);
    }
  }
  return exit_code_for(ErrorKind::Usage);
}

}  // namespace oarbank::cli
