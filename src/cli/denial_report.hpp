// Issue 14: sandbox-run's denials on stderr (one line each) and in --result's JSON
// ("denials", "denial_diagnostics"; docs/denials.md).
#pragma once

#include <string>

#include "supervise/run_denials.hpp"

namespace oarbank::cli {

// The summary, one line per denial, when `print` (the module failed, or --denials); a line
// for what could not be recorded, when records were dropped or a mechanism was unavailable.
void report_denials(const char* command, const RunDenials& denials, bool print);

// `result_json` (run_result_to_json's line) with "denials" and "denial_diagnostics" added.
std::string with_denials(const std::string& result_json, const RunDenials& denials);

}  // namespace oarbank::cli
