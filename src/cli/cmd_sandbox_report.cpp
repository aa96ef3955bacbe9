// sandbox-report [--json] [--format table|json|nfd] [--verify]: what this node enforces.
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "config/node_config.hpp"
#include "probe/probe.hpp"
#include "report/report.hpp"
#include "report/verify.hpp"
#include "sys/error.hpp"

namespace oarbank::cli {
namespace {

struct ReportOptions {
  std::optional<std::string> config_path;
  bool json = false;
  std::string format = "table";
  bool verify = false;
};

constexpr const char* kCommand = "sandbox-report";

int run(const ReportOptions& options) {
  return run_guarded(kCommand, "", [&]() -> int {
    const NodeConfig config = load_node_config(options.config_path);
    Report report = make_report(probe_kernel(config), config);
    if (options.verify) report.verifications = verify_report(report, config);
    const std::string format = options.json ? "json" : options.format;
    if (format == "json") {
      std::cout << report_to_json(report).dump(2) << '\n';
    } else if (format == "nfd") {
      std::cout << report_to_nfd(report);
    } else {
      std::cout << report_to_table(report);
    }
    std::cout.flush();
    if (any_verification_failed(report)) {
      print_error(kCommand,
                  "a probe under the real launcher got through: a row marked enforced is not");
      return exit_code_for(ErrorKind::Unenforceable);
    }
    return 0;
  });
}

}  // namespace

Runner add_sandbox_report(CLI::App& app) {
  auto options = std::make_shared<ReportOptions>();
  auto* sub =
      app.add_subcommand(kCommand,
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
  return [options] { return run(*options); };
}

}  // namespace oarbank::cli
