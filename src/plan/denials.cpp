#include "plan/denials.hpp"

#include <fmt/format.h>

namespace oarbank {

std::string Denial::key() const {
  return mechanism + '\0' + operation + '\0' + object + '\0' + executable;
}

nlohmann::json denials_to_json(const std::vector<Denial>& denials) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& d : denials) {
    list.push_back({{"mechanism", d.mechanism},
                    {"operation", d.operation},
                    {"object", d.object},
                    {"error", d.error},
                    {"pid", d.pid > 0 ? nlohmann::json(d.pid) : nlohmann::json(nullptr)},
                    {"executable",
                     d.executable.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.executable)},
                    {"count", d.count},
                    {"allowed_by",
                     d.allowed_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.allowed_by)},
                    {"reason", d.reason},
                    {"grant", d.grant}});
  }
  return list;
}

nlohmann::json diagnostics_to_json(const DenialDiagnostics& diagnostics) {
  return {{"syscalls", diagnostics.syscalls},
          {"filesystem", diagnostics.filesystem},
          {"network", diagnostics.network},
          {"dropped", diagnostics.dropped}};
}

std::string denial_line(const Denial& d) {
  std::string who = d.executable.empty() ? std::string() : " by " + d.executable;
  if (d.pid > 0) who += fmt::format(" (pid {})", d.pid);
  const std::string times = d.count == 1 ? "once" : fmt::format("{} times", d.count);
  const std::string object = d.object.empty() ? std::string() : " " + d.object;
  if (!d.allowed_by.empty()) {
    return fmt::format("refused ({}): {}{}{}, {}: {}; {}", d.mechanism, d.operation, object, who,
                       times, d.reason, d.allowed_by);
  }
  return fmt::format("refused ({}): {}{}{}, {}: no policy allows it: {}", d.mechanism, d.operation,
                     object, who, times, d.reason);
}

std::string apply_grant(nlohmann::json& policy, const nlohmann::json& grant) {
  if (!grant.is_object() || !grant.contains("key") || !grant["key"].is_string()) return "";
  const std::string key = grant["key"].get<std::string>();
  if (grant.contains("set")) {
    const nlohmann::json before = policy.contains(key) ? policy[key] : nlohmann::json(nullptr);
    if (before == grant["set"]) return "";
    policy[key] = grant["set"];
    return fmt::format("\"{}\": {} -> {}", key, before.is_null() ? "(unset)" : before.dump(),
                       grant["set"].dump());
  }
  if (grant.contains("add")) {
    nlohmann::json& list = policy[key];
    if (list.is_null()) list = nlohmann::json::array();
    if (!list.is_array()) return "";
    for (const auto& item : list) {
      if (item == grant["add"]) return "";
    }
    list.push_back(grant["add"]);
    return fmt::format("+ \"{}\": {}", key, grant["add"].dump());
  }
  return "";
}

}  // namespace oarbank
