// sandbox-report [--json] [--format table|json|nfd] [--verify]: what this node enforces.
#include <iostream>
#include <optional>

#include "cli/commands.hpp"
#include "config/node_config.hpp"
#include "probe/probe.hpp"
#include "report/report.hpp"
#include "report/verify.hpp"
#include "sys/error.hpp"

namespace oarbank::cli {
namespace {

constexpr const char* kCommand = "sandbox-report";

}  // namespace

int run_sandbox_report(const ReportArgs& options) {
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

}  // namespace oarbank::cli
