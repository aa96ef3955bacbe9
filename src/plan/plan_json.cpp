#include "plan/plan_json.hpp"

#include <nlohmann/json.hpp>

#include "plan/landlock_rights.hpp"
#include "plan/launch_steps.hpp"
#include "plan/mechanism.hpp"
#include "plan/world_json.hpp"

namespace oarbank {

using nlohmann::json;

json kernel_features_to_json(const KernelFeatures& features, const NodeConfig& config) {
  return json{
      {"kernel_release", features.kernel_release},
      {"landlock", to_string(features.landlock)},
      {"landlock_abi", features.landlock_abi},
      {"landlock_abi_used", effective_landlock_abi(features, config)},
      {"seccomp_filter", features.seccomp_filter},
      {"seccomp_user_notif", features.seccomp_user_notif},
      {"audit_enabled",
       features.audit_enabled >= 0 ? json(features.audit_enabled > 0) : json(nullptr)},
      {"running_as_root", features.running_as_root},
      {"gpu_device_nodes", features.gpu_device_nodes},
      {"network_namespaces",
       features.network_namespaces_probed ? json(features.network_namespaces) : json(nullptr)},
  };
}

json explain_plan(const Plan& plan, const Policy& policy, const KernelFeatures& features,
                  const NodeConfig& config) {
  json path_rules = json::array();
  for (const auto& rule : plan.landlock.path_rules) {
    path_rules.push_back({{"path", rule.path},
                          {"type", rule.is_directory ? "directory" : "file"},
                          {"access", landlock::fs_right_names(rule.access)},
                          {"why", rule.why}});
  }
  json port_rules = json::array();
  for (const auto& rule : plan.landlock.port_rules) {
    port_rules.push_back({{"port", rule.port},
                          {"access", landlock::net_right_names(rule.access)},
                          {"why", rule.why}});
  }
  json seccomp_rules = json::array();
  for (const auto& rule : seccomp::rules_for(plan.filter)) {
    json args = json::array();
    for (const auto& check : rule.args) args.push_back(seccomp::describe(check));
    seccomp_rules.push_back({{"syscall", rule.syscall},
                             {"errno", seccomp::errno_name(rule.errno_value)},
                             {"when", args},
                             {"why", rule.why}});
  }
  for (const auto& list : seccomp::allowlists32()) {
    seccomp_rules.push_back({{"syscall", list.syscall},
                             {"errno", seccomp::errno_name(list.errno_value)},
                             {"when", json::array({seccomp::describe(list)})},
                             {"why", list.why}});
  }
  json relies_on = json::array();
  for (const auto& verdict : plan.relies_on) {
    relies_on.push_back({{"row", row_key(verdict.row)},
                         {"title", row_title(verdict.row)},
                         {"status", to_string(verdict.status)},
                         {"reason", verdict.reason}});
  }
  // The launcher's steps, in the order launch() runs them (plan/launch_steps.hpp). The exec
  // step has always been "execve" here; everywhere else (the status channel) it is "exec".
  json steps = json::array();
  for (const auto& step : launcher_steps()) {
    steps.push_back(step.step == LaunchStep::Exec ? std::string_view("execve") : step.name);
  }
  json fds = json::array({0, 1, 2});
  for (int fd : plan.keep_fds) fds.push_back(fd);
  json out{
      {"policy", policy_to_json(policy)},
      {"node", node_config_to_json(config)},
      {"kernel", kernel_features_to_json(features, config)},
      {"steps", steps},
      {"landlock",
       {{"abi", plan.landlock.abi},
        {"handled_access_fs", landlock::fs_right_names(plan.landlock.handled_fs)},
        {"handled_access_net", landlock::net_right_names(plan.landlock.handled_net)},
        {"scoped", landlock::scope_names(plan.landlock.scoped)},
        {"path_rules", path_rules},
        {"port_rules", port_rules}}},
      {"seccomp",
       {{"variant", plan.filter.name()},
        {"default_action", "allow"},
        {"other_syscall_abis", "kill the process"},
        {"syscalls_above", seccomp::kHighestReviewedSyscallX86_64},
        {"syscalls_above_errno", "ENOSYS"},
        {"rules", seccomp_rules}}},
      {"identity", plan.identity.change
                       ? json{{"change", true},
                              {"uid", plan.identity.uid},
                              {"gid", plan.identity.gid},
                              {"supplementary_groups", json::array()},
                              {"capabilities", "none in any set"}}
                       : json{{"change", false},
                              {"capabilities",
                               "none in the effective, permitted, inheritable and ambient sets"}}},
      {"environment", plan.environment},
      {"argv", plan.argv},
      {"file_descriptors", fds},
      {"relies_on", relies_on},
  };
  out["world"] = explain_world(plan, policy);  // plan/world_json.hpp
  // Each mechanism's keys (plan/mechanisms.cpp): the network's egress_confinement.
  const MechanismInput input{policy, features, config};
  for (const Mechanism* mechanism : mechanisms()) {
    if (mechanism->explain != nullptr) mechanism->explain(input, plan, out);
  }
  return out;
}

std::string explain_plan_text(const Plan& plan, const Policy& policy,
                              const KernelFeatures& features, const NodeConfig& config) {
  return explain_plan(plan, policy, features, config).dump(2);
}

}  // namespace oarbank
