// The docs the capability table makes (issue 11): docs/report.md's row table and
// docs/kernels.md's per-kernel reports are rendered here from the table's entries and by the
// real report renderer, and tests/unit/docs_test.cpp fails when a doc differs from what this
// renders (OARBANK_UPDATE_GOLDEN=1 rewrites it). A new row reaches those docs by regeneration,
// not by hand. Pure.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config/node_config.hpp"
#include "probe/kernel_features.hpp"

namespace oarbank {

// One Markdown table row per entry of capability_table(), in the report's order: its id, its
// title, the statuses it can have, what it needs of the node, when a policy needs it.
std::string capability_rows_markdown();

// A kernel of the matrix (tests/vm) or a host, by the facts recorded of it.
struct RecordedKernel {
  std::string_view heading;  // the section's heading ("Debian 12, Linux 6.1 (Landlock ABI 2)")
  std::string_view label;    // the summary table's first column
  std::string_view note;     // a paragraph before the block ("" for none)
  KernelFeatures features;
  NodeConfig config;
};

// A summary table (filesystem, egress-allowlist, IPC per kernel) and, per kernel, a section with
// `sandbox-report`'s table (report_to_table) for its facts.
std::string kernel_reports_markdown(std::span<const RecordedKernel> kernels);

// `doc` with the text between the lines `<!-- BEGIN generated: NAME ... -->` and
// `<!-- END generated: NAME -->` replaced by `body`; nullopt when the markers are missing.
std::optional<std::string> replace_generated(std::string_view doc, std::string_view name,
                                             std::string_view body);

}  // namespace oarbank
