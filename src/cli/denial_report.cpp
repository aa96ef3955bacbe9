#include "cli/denial_report.hpp"

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"

namespace oarbank::cli {

void report_denials(const char* command, const RunDenials& denials, bool print) {
  if (!print) return;
  const auto list = denials.denials();
  // Session 21's attack review: a module can be refused 256 distinct things at will; the
  // operator's terminal (or journal) gets the first kLinesShown, and --result all of them.
  constexpr std::size_t kLinesShown = 32;
  for (std::size_t i = 0; i < list.size() && i < kLinesShown; ++i)
    print_error(command, denial_line(list[i]));
  if (list.size() > kLinesShown) {
    print_error(command, std::to_string(list.size() - kLinesShown) +
                             " more distinct refusal(s) not shown here: --result FILE lists "
                             "them all");
  }
  const DenialDiagnostics diagnostics = denials.diagnostics();
  if (diagnostics.dropped > 0) {
    print_error(command, std::to_string(diagnostics.dropped) +
                             " more refusal(s) not recorded: the table of distinct denials was "
                             "full");
  }
}

std::string with_denials(const std::string& result_json, const RunDenials& denials) {
  nlohmann::json j = nlohmann::json::parse(result_json);
  j["denials"] = denials_to_json(denials.denials());
  j["denial_diagnostics"] = diagnostics_to_json(denials.diagnostics());
  // Never throws on bytes that are not UTF-8 (denials_to_json escapes them already): the
  // result must be written whatever the module named. ASCII only (attack review): a path the
  // module named may hold C1 controls (U+009B is CSI) that JSON leaves as they are, and a
  // result is read with cat; every other character is \uXXXX, the same JSON.
  return j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace oarbank::cli
