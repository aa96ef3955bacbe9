#include "plan/uid_leases.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

namespace oarbank {

const UidLease* UidLeaseTable::find(const std::string& id) const {
  for (const auto& lease : leases) {
    if (lease.id == id) return &lease;
  }
  return nullptr;
}

UidLease* UidLeaseTable::find(const std::string& id) {
  for (auto& lease : leases) {
    if (lease.id == id) return &lease;
  }
  return nullptr;
}

std::string uid_lease_table_to_json(const UidLeaseTable& table) {
  nlohmann::json leases = nlohmann::json::array();
  for (const auto& lease : table.leases) {
    leases.push_back({{"id", lease.id},
                      {"uid", lease.uid},
                      {"gid", lease.gid},
                      {"leased_at", lease.leased_at},
                      {"last_run", lease.last_run},
                      {"paths", lease.paths}});
  }
  return nlohmann::json{{"version", 1}, {"leases", leases}}.dump(1) + "\n";
}

std::optional<UidLeaseTable> uid_lease_table_from_json(const std::string& text,
                                                       std::string& problem) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) {
    problem = "not a JSON object";
    return std::nullopt;
  }
  UidLeaseTable table;
  std::set<std::uint32_t> uids;
  std::set<std::string> ids;
  try {
    if (j.at("version").get<int>() != 1) {
      problem = "version " + j.at("version").dump() + " (this build reads version 1)";
      return std::nullopt;
    }
    for (const auto& item : j.at("leases")) {
      UidLease lease;
      lease.id = item.at("id").get<std::string>();
      lease.uid = item.at("uid").get<std::uint32_t>();
      lease.gid = item.at("gid").get<std::uint32_t>();
      lease.leased_at = item.at("leased_at").get<std::int64_t>();
      lease.last_run = item.at("last_run").get<std::int64_t>();
      lease.paths = item.at("paths").get<std::vector<std::string>>();
      if (lease.uid == 0 || lease.gid == 0) {
        problem = "lease of " + lease.id + " names uid or gid 0";
        return std::nullopt;
      }
      if (!uids.insert(lease.uid).second) {
        problem = "uid " + std::to_string(lease.uid) + " is leased twice";
        return std::nullopt;
      }
      if (!ids.insert(lease.id).second) {
        problem = "id " + lease.id + " has two leases";
        return std::nullopt;
      }
      table.leases.push_back(std::move(lease));
    }
  } catch (const nlohmann::json::exception& e) {
    problem = std::string("not a lease table (") + e.what() + ")";
    return std::nullopt;
  }
  std::sort(table.leases.begin(), table.leases.end(),
            [](const UidLease& a, const UidLease& b) { return a.id < b.id; });
  return table;
}

std::optional<std::uint32_t> choose_module_uid(const UidLeaseTable& table, std::uint32_t first,
                                               std::uint32_t last,
                                               const std::function<bool(std::uint32_t)>& named) {
  std::set<std::uint32_t> held;
  for (const auto& lease : table.leases) held.insert(lease.uid);
  for (std::uint64_t n = first; n <= last; ++n) {
    const auto uid = static_cast<std::uint32_t>(n);
    // 65534 is the kernel's overflow uid: files of unmapped owners show as it.
    if (uid == 0 || uid == 65534 || held.count(uid) != 0) continue;
    if (named(uid)) continue;
    return uid;
  }
  return std::nullopt;
}

bool lease_is_due(const UidLease& lease, std::int64_t now, std::uint32_t days) {
  return now - lease.last_run >= static_cast<std::int64_t>(days) * 86400;
}

bool remember_lease_path(UidLease& lease, const std::string& path) {
  auto at = std::lower_bound(lease.paths.begin(), lease.paths.end(), path);
  if (at != lease.paths.end() && *at == path) return false;
  lease.paths.insert(at, path);
  return true;
}

}  // namespace oarbank
