#include "report/report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "plan/plan_json.hpp"

namespace oarbank {

using nlohmann::json;

namespace {

json cgroup_facts_to_json(const CgroupFacts& cg) {
  if (!cg.probed) return json(nullptr);
  return json{{"cgroup2_mounted", cg.mounted},
              {"mount_point", cg.mount_point},
              {"own_cgroup", cg.own_cgroup},
              {"leaf_parent", cg.parent},
              {"leaf_parent_writable", cg.parent_writable},
              {"delegated_by_systemd", cg.delegated},
              {"controllers", cg.controllers},
              {"cgroup_kill", cg.kill_file},
              {"cgroup_freeze", cg.freeze_file}};
}

const RowVerification* verification_of(const Report& report, CapabilityRow row) {
  for (const auto& v : report.verifications) {
    if (v.row == row) return &v;
  }
  return nullptr;
}

// The word a row shows: its status, or "failed" when --verify caught a probe getting through.
std::string status_word(const Report& report, const CapabilityVerdict& verdict) {
  const auto* v = verification_of(report, verdict.row);
  if (v != nullptr && !v->passed) return "failed";
  return std::string(to_string(verdict.status));
}

}  // namespace

std::string wrap_text(std::string_view text, std::string_view first_prefix,
                      std::string_view rest_prefix, std::size_t width) {
  std::string out;
  std::string line(first_prefix);
  bool empty = true;  // nothing but the prefix on `line` yet
  const auto flush = [&] {
    out += line;
    out += '\n';
    line = std::string(rest_prefix);
    empty = true;
  };
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (text[pos] == ' ') {
      ++pos;
      continue;
    }
    const std::size_t end = std::min(text.find(' ', pos), text.size());
    std::string_view word = text.substr(pos, end - pos);
    pos = end;
    while (!word.empty()) {
      const std::size_t room = width > line.size() ? width - line.size() : 0;
      const std::size_t needed = word.size() + (empty ? 0 : 1);
      if (needed <= room) {
        if (!empty) line += ' ';
        line += word;
        empty = false;
        break;
      }
      if (!empty) {
        flush();
        continue;
      }
      // A word longer than a whole line (a long path): broken where the line ends.
      const std::size_t take = std::max<std::size_t>(room, 1);
      line += word.substr(0, take);
      word.remove_prefix(std::min(take, word.size()));
      flush();
    }
  }
  if (!empty || out.empty()) flush();
  return out;
}

Report make_report(const KernelFeatures& features, const NodeConfig& config) {
  Report report;
  report.rows = evaluate_capabilities(features, config);
  report.facts = kernel_features_to_json(features, config);
  report.facts["cgroup"] = cgroup_facts_to_json(features.cgroup);
  report.facts["network_namespaces"] =
      features.network_namespaces_probed ? json(features.network_namespaces) : json(nullptr);
  report.facts["ipc_namespaces"] =
      features.network_namespaces_probed ? json(features.ipc_namespaces) : json(nullptr);
  report.facts["landlock_abi_max"] =
      config.landlock_abi_max ? json(*config.landlock_abi_max) : json(nullptr);
  report.facts["hard_limits"] = config.hard_limits;
  return report;
}

bool any_verification_failed(const Report& report) {
  return std::any_of(report.verifications.begin(), report.verifications.end(),
                     [](const RowVerification& v) { return !v.passed; });
}

json report_to_json(const Report& report) {
  json rows = json::array();
  for (const auto& verdict : report.rows) {
    json row{{"row", row_key(verdict.row)},
             {"title", row_title(verdict.row)},
             {"status", status_word(report, verdict)},
             {"reason", verdict.reason}};
    if (const auto* v = verification_of(report, verdict.row)) {
      row["verified"] = v->passed;
      row["verification"] = v->detail;
    }
    rows.push_back(std::move(row));
  }
  return json{{"rows", rows}, {"facts", report.facts}};
}

std::string report_to_table(const Report& report) {
  // Issue 16: a row per block, so that the table fits an 80-column terminal whatever a reason
  // says: the row's id (the --json and NFD key) and its status on one line, the capability and
  // its reason wrapped below it.
  std::size_t key_width = 0;
  for (const auto& verdict : report.rows)
    key_width = std::max(key_width, row_key(verdict.row).size());
  const std::string indent(4, ' ');
  std::string out = fmt::format("{:<{}}  {}\n", "ROW", key_width, "STATUS");
  out += wrap_text("capability: reason", indent, indent);
  for (const auto& verdict : report.rows) {
    out +=
        fmt::format("{:<{}}  {}\n", row_key(verdict.row), key_width, status_word(report, verdict));
    out += wrap_text(fmt::format("{}: {}", row_title(verdict.row), verdict.reason), indent, indent);
    if (const auto* v = verification_of(report, verdict.row)) {
      out += wrap_text(fmt::format("{} {}", v->passed ? "(verified)" : "(FAILED)", v->detail),
                       indent, indent);
    }
  }
  const auto& f = report.facts;
  // A fact's value wraps below its own column.
  const auto fact = [](std::string_view label, const std::string& value) {
    return wrap_text(value, fmt::format("  {:<19}", label), std::string(21, ' '));
  };
  out += "\nFacts:\n";
  out += fact("kernel release", f.value("kernel_release", ""));
  out += fact("Landlock", fmt::format("{} (ABI {}; used: ABI {}{})", f.value("landlock", ""),
                                      f.value("landlock_abi", 0), f.value("landlock_abi_used", 0),
                                      f["landlock_abi_max"].is_null()
                                          ? ""
                                          : fmt::format(", capped at {} by the node",
                                                        f["landlock_abi_max"].get<int>())));
  out += fact("seccomp filters",
              std::string(f.value("seccomp_filter", false) ? "yes" : "no") +
                  (f.value("seccomp_user_notif", false) ? " (user notification: yes)"
                                                        : " (user notification: no)"));
  out += fact("audit", !f.contains("audit_enabled") || f["audit_enabled"].is_null()
                           ? "not known (not root)"
                           : (f["audit_enabled"].get<bool>() ? "on" : "off"));
  if (f["cgroup"].is_object()) {
    const auto& cg = f["cgroup"];
    if (cg.value("cgroup2_mounted", false)) {
      std::string controllers;
      for (const auto& c : cg["controllers"])
        controllers += (controllers.empty() ? "" : " ") + c.get<std::string>();
      out += fact(
          "cgroup2",
          fmt::format("{} (own cgroup {}); leaves under {} ({}{})", cg.value("mount_point", ""),
                      cg.value("own_cgroup", ""), cg.value("leaf_parent", ""),
                      cg.value("leaf_parent_writable", false) ? "writable" : "not writable",
                      cg.value("delegated_by_systemd", false) ? ", delegated by systemd" : ""));
      out += fact("cgroup controllers", controllers.empty() ? "(none)" : controllers);
    } else {
      out += fact("cgroup2", "not mounted");
    }
  }
  if (!f["network_namespaces"].is_null()) {
    out += fact("network namespaces",
                f["network_namespaces"].get<bool>() ? "can create" : "cannot create");
  }
  if (f.contains("ipc_namespaces") && !f["ipc_namespaces"].is_null()) {
    out += fact("IPC namespaces", f["ipc_namespaces"].get<bool>() ? "can create" : "cannot create");
  }
  std::string gpu;
  for (const auto& node : f["gpu_device_nodes"])
    gpu += (gpu.empty() ? "" : " ") + node.get<std::string>();
  out += fact("GPU device nodes", gpu.empty() ? "(none)" : gpu);
  return out;
}

std::string report_to_nfd(const Report& report) {
  std::string out =
      "# oarbank-agent sandbox-report --format nfd: what this node's sandbox enforces\n";
  for (const auto& verdict : report.rows) {
    std::string value = status_word(report, verdict);
    std::replace(value.begin(), value.end(), ' ', '-');  // label values: [A-Za-z0-9._-]
    out += fmt::format("{}{}={}\n", kNfdPrefix, row_key(verdict.row), value);
  }
  out += fmt::format("{}landlock-abi={}\n", kNfdPrefix, report.facts.value("landlock_abi_used", 0));
  return out;
}

}  // namespace oarbank
