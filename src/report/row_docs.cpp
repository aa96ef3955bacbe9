#include "report/row_docs.hpp"

#include <fmt/format.h>

#include "plan/capabilities.hpp"
#include "report/report.hpp"
#include "sys/landlock_abi.hpp"

namespace oarbank {

namespace {

// A table cell: Markdown ends a cell at '|'.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string statuses_text(CapabilityStatusSet set) {
  std::string out;
  // The order the report's readers meet them in: the best first.
  for (auto status : {CapabilityStatus::Enforced, CapabilityStatus::PortOnly,
                      CapabilityStatus::Unavailable, CapabilityStatus::NotPromised}) {
    if ((set & status_bit(status)) == 0) continue;
    if (!out.empty()) out += " / ";
    out += to_string(status);
  }
  return out;
}

std::string needs_text(const CapabilityEntry& entry) {
  if (entry.landlock == landlock::Abi::Unsupported) return std::string(entry.needs);
  std::string out = fmt::format("Landlock ABI {} ({})", landlock::number(entry.landlock),
                                landlock::linux_release(entry.landlock));
  if (!entry.needs.empty()) out += fmt::format(" and {}", entry.needs);
  return out;
}

std::string status_named(const Report& report, std::string_view key) {
  for (const auto& verdict : report.rows) {
    if (row_key(verdict.row) == key) return std::string(to_string(verdict.status));
  }
  return "?";
}

}  // namespace

std::string capability_rows_markdown() {
  std::string out =
      "| row (`--json` key) | capability | status | needs | a policy needs it when |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const auto& entry : capability_table()) {
    out += fmt::format(
        "| `{}` | {} | {} | {} | {} |\n", entry.key, cell(entry.title),
        statuses_text(entry.statuses), cell(needs_text(entry)),
        entry.needed_when.empty() ? "never (the report's alone)" : cell(entry.needed_when));
  }
  return out;
}

std::string kernel_reports_markdown(std::span<const RecordedKernel> kernels) {
  std::string out =
      "| kernel | Landlock | filesystem | egress-allowlist | IPC |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const auto& kernel : kernels) {
    const Report report = make_report(kernel.features, kernel.config);
    const std::string landlock = kernel.features.landlock == LandlockState::Present
                                     ? fmt::format("ABI {}", kernel.features.landlock_abi)
                                     : std::string(to_string(kernel.features.landlock));
    out += fmt::format("| {} | {} | {} | {} | {} |\n", kernel.label, landlock,
                       status_named(report, "filesystem"),
                       status_named(report, "net.egress-allowlist"), status_named(report, "ipc"));
  }
  for (const auto& kernel : kernels) {
    out += fmt::format("\n## {}\n\n", kernel.heading);
    if (!kernel.note.empty()) out += wrap_text(kernel.note, "", "", 96) + "\n";
    out += "```\n" + report_to_table(make_report(kernel.features, kernel.config)) + "```\n";
  }
  return out;
}

std::optional<std::string> replace_generated(std::string_view doc, std::string_view name,
                                             std::string_view body) {
  const std::string begin = fmt::format("<!-- BEGIN generated: {}", name);
  const std::string end = fmt::format("<!-- END generated: {} -->", name);
  const std::size_t begin_at = doc.find(begin);
  if (begin_at == std::string_view::npos) return std::nullopt;
  const std::size_t body_at = doc.find('\n', begin_at);
  const std::size_t end_at = doc.find(end, begin_at);
  if (body_at == std::string_view::npos || end_at == std::string_view::npos || end_at < body_at) {
    return std::nullopt;
  }
  std::string out(doc.substr(0, body_at + 1));
  out += body;
  out += doc.substr(end_at);
  return out;
}

}  // namespace oarbank
