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

Report make_report(const KernelFeatures& features, const NodeConfig& config) {
  Report report;
  report.rows = evaluate_capabilities(features, config);
  report.facts = kernel_features_to_json(features, config);
  report.facts["cgroup"] = cgroup_facts_to_json(features.cgroup);
  report.facts["network_namespaces"] =
      features.network_namespaces_probed ? json(features.network_namespaces) : json(nullptr);
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
  std::size_t title_width = 0;
  for (const auto& verdict : report.rows)
    title_width = std::max(title_width, row_title(verdict.row).size());
  std::string out =
      fmt::format("{:<{}}  {:<12}  {}\n", "CAPABILITY", title_width, "STATUS", "REASON");
  for (const auto& verdict : report.rows) {
    out += fmt::format("{:<{}}  {:<12}  {}\n", row_title(verdict.row), title_width,
                       status_word(report, verdict), verdict.reason);
    if (const auto* v = verification_of(report, verdict.row)) {
      out += fmt::format("{:<{}}  {:<12}  {}\n", "", title_width,
                         v->passed ? "(verified)" : "(FAILED)", v->detail);
    }
  }
  const auto& f = report.facts;
  out += "\nFacts:\n";
  out += fmt::format("  kernel release     {}\n", f.value("kernel_release", ""));
  out += fmt::format(
      "  Landlock           {} (ABI {}; used: ABI {}{})\n", f.value("landlock", ""),
      f.value("landlock_abi", 0), f.value("landlock_abi_used", 0),
      f["landlock_abi_max"].is_null()
          ? ""
          : fmt::format(", capped at {} by the node", f["landlock_abi_max"].get<int>()));
  out += fmt::format("  seccomp filters    {}\n", f.value("seccomp_filter", false) ? "yes" : "no");
  if (f["cgroup"].is_object()) {
    const auto& cg = f["cgroup"];
    if (cg.value("cgroup2_mounted", false)) {
      std::string controllers;
      for (const auto& c : cg["controllers"])
        controllers += (controllers.empty() ? "" : " ") + c.get<std::string>();
      out += fmt::format("  cgroup2            {} (own cgroup {}); leaves under {} ({}{})\n",
                         cg.value("mount_point", ""), cg.value("own_cgroup", ""),
                         cg.value("leaf_parent", ""),
                         cg.value("leaf_parent_writable", false) ? "writable" : "not writable",
                         cg.value("delegated_by_systemd", false) ? ", delegated by systemd" : "");
      out += fmt::format("  cgroup controllers {}\n", controllers.empty() ? "(none)" : controllers);
    } else {
      out += "  cgroup2            not mounted\n";
    }
  }
  if (!f["network_namespaces"].is_null()) {
    out += fmt::format("  network namespaces {}\n",
                       f["network_namespaces"].get<bool>() ? "can create" : "cannot create");
  }
  std::string gpu;
  for (const auto& node : f["gpu_device_nodes"])
    gpu += (gpu.empty() ? "" : " ") + node.get<std::string>();
  out += fmt::format("  GPU device nodes   {}\n", gpu.empty() ? "(none)" : gpu);
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
