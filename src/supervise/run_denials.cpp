#include "supervise/run_denials.hpp"

namespace oarbank {

void RunDenials::prepare(Plan& plan, const std::string& denial_audit) {
  notify_asked_ = seccomp_user_notification_available();
  plan.seccomp_notify = notify_asked_;
  audit_unavailable_ = audit_.open(denial_audit, plan.landlock.abi);
  plan.landlock_log_new_exec = audit_.opened();
}

std::vector<Denial> RunDenials::denials() const {
  std::vector<Denial> list = table_.denials();
  if (!writable_check_) return list;
  for (auto& d : list) {
    if (!d.grant.is_object()) continue;
    const std::string key = d.grant.value("key", "");
    if (key != "work" && key != "temp" && key != "data" && key != "runtime") continue;
    const nlohmann::json path = d.grant.contains("add")   ? d.grant.at("add")
                                : d.grant.contains("set") ? d.grant.at("set")
                                                          : nlohmann::json();
    if (!path.is_string()) continue;
    const std::string& grant_path = path.get_ref<const std::string&>();
    const bool makes_entries = d.operation.starts_with("fs.make_") ||
                               d.operation.starts_with("fs.remove_") || d.operation == "fs.refer";
    const auto asked = std::tuple{key, grant_path, makes_entries};
    auto known = writable_problems_.find(asked);
    if (known == writable_problems_.end()) {
      known =
          writable_problems_.emplace(asked, writable_check_(key, grant_path, makes_entries)).first;
    }
    const std::string& problem = known->second;
    if (problem.empty()) continue;
    d.reason += "; not proposed as it is: " + problem;
    d.grant = nullptr;
  }
  return list;
}

DenialDiagnostics RunDenials::diagnostics() const {
  DenialDiagnostics d;
  if (seccomp_.served()) {
    d.syscalls = "recorded";
  } else if (!notify_asked_) {
    d.syscalls = "unavailable: the kernel has no seccomp user notification (Linux 5.0)";
  } else {
    d.syscalls =
        "unavailable: the module's filter listener was not received (no exec, or no "
        "thread to answer it)";
  }
  if (audit_.opened()) {
    d.filesystem = "recorded";
    if (audit_.lost() > 0 && !audit_.domain_seen()) {
      d.filesystem = "unrecorded: the audit socket overflowed " + std::to_string(audit_.lost()) +
                     " time(s) and the run's Landlock domain was never identified (the kernel "
                     "names it once, with its first refusal, and that record may be among those "
                     "lost): none of its filesystem or network refusals could be recorded";
    } else if (audit_.lost() > 0) {
      d.filesystem = "recorded, some lost: the audit socket overflowed " +
                     std::to_string(audit_.lost()) + " time(s)";
    } else if (audit_.cut_short()) {
      d.filesystem =
          "recorded, some lost: records kept arriving (other modules' refusals, node-wide) and "
          "the last read stopped at its deadline";
    } else if (audit_.kernel_lost() > 0) {
      d.filesystem = "recorded, some may be lost: the kernel dropped " +
                     std::to_string(audit_.kernel_lost()) +
                     " audit record(s) node-wide during the run (audit backlog_limit " +
                     std::to_string(audit_.backlog_limit()) + ")";
    }
  } else {
    d.filesystem = "unavailable: " + audit_unavailable_;
  }
  d.network = d.filesystem;
  d.dropped = table_.dropped();
  return d;
}

}  // namespace oarbank
