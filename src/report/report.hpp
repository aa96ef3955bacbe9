// The enforcement report (pure): the capability table evaluated for this node, with the facts
// it was computed from, as a table for people, JSON for machines, or a Kubernetes Node Feature
// Discovery feature file for schedulers.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/node_config.hpp"
#include "plan/capabilities.hpp"
#include "probe/kernel_features.hpp"

namespace oarbank {

// A row's outcome under --verify: a probe under the real launcher tried the forbidden thing.
struct RowVerification {
  CapabilityRow row;
  bool passed = false;
  std::string detail;  // what was tried and what happened
};

struct Report {
  std::vector<CapabilityVerdict> rows;
  nlohmann::json facts;
  std::vector<RowVerification> verifications;  // empty without --verify
};

Report make_report(const KernelFeatures& features, const NodeConfig& config);

// True if a verification failed (the report then exits 70).
bool any_verification_failed(const Report& report);

nlohmann::json report_to_json(const Report& report);
// For people: fits a terminal of kTableWidth columns, each row shown with its id (the --json
// and NFD key).
std::string report_to_table(const Report& report);
inline constexpr std::size_t kTableWidth = 80;

// `text` split at spaces into lines of at most `width` columns, each ending in '\n': the first
// after `first_prefix`, the others after `rest_prefix`; a word longer than a line is broken.
std::string wrap_text(std::string_view text, std::string_view first_prefix,
                      std::string_view rest_prefix, std::size_t width = kTableWidth);

// NFD's local feature file: one "key=value" line per row, keys namespaced under
// feature.node.kubernetes.io/oarbank-sandbox.*, values valid label values.
std::string report_to_nfd(const Report& report);
inline constexpr const char* kNfdPrefix = "feature.node.kubernetes.io/oarbank-sandbox.";

}  // namespace oarbank
