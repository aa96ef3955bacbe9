#include "plan/uid_leases.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace oarbank {

std::string uid_lease_to_json(const UidLease& lease) {
  return nlohmann::json{{"id", lease.id},
                        {"uid", lease.uid},
                        {"gid", lease.gid},
                        {"leased_at", lease.leased_at},
                        {"last_run", lease.last_run},
                        {"paths", lease.paths}}
             .dump() +
         "\n";
}

std::optional<UidLease> uid_lease_from_json(const std::string& text, std::string& problem) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) {
    problem = "not a JSON object";
    return std::nullopt;
  }
  try {
    UidLease lease;
    lease.id = j.at("id").get<std::string>();
    // An id number as the kernel takes it: 1 to 4294967294 ((uid_t)-1 means "no change").
    auto id_number = [&](const char* key) -> std::optional<std::uint32_t> {
      const auto& v = j.at(key);
      if (!v.is_number_unsigned() || v.get<std::uint64_t>() > 4294967294U) return std::nullopt;
      return static_cast<std::uint32_t>(v.get<std::uint64_t>());
    };
    const auto uid = id_number("uid");
    const auto gid = id_number("gid");
    if (!uid || !gid) {
      problem = "its uid or gid is not a number from 0 to 4294967294";
      return std::nullopt;
    }
    lease.uid = *uid;
    lease.gid = *gid;
    lease.leased_at = j.at("leased_at").get<std::int64_t>();
    lease.last_run = j.at("last_run").get<std::int64_t>();
    lease.paths = j.at("paths").get<std::vector<std::string>>();
    if (lease.uid == 0 || lease.gid == 0) {
      problem = "it names uid or gid 0";
      return std::nullopt;
    }
    return lease;
  } catch (const nlohmann::json::exception& e) {
    problem = std::string("not a lease (") + e.what() + ")";
    return std::nullopt;
  }
}

std::optional<std::uint32_t> choose_module_uid(std::uint32_t first, std::uint32_t last,
                                               const std::function<bool(std::uint32_t)>& taken) {
  for (std::uint64_t n = first; n <= last; ++n) {
    const auto uid = static_cast<std::uint32_t>(n);
    // 65534 is the kernel's overflow uid: files of unmapped owners show as it.
    if (uid == 0 || uid == 65534) continue;
    if (!taken(uid)) return uid;
  }
  return std::nullopt;
}

std::vector<std::uint32_t> proc_status_ids(std::string_view status) {
  std::vector<std::uint32_t> ids;
  while (!status.empty()) {
    const auto end = status.find('\n');
    std::string_view line = status.substr(0, end);
    status = end == std::string_view::npos ? std::string_view() : status.substr(end + 1);
    const bool wanted =
        line.starts_with("Uid:") || line.starts_with("Gid:") || line.starts_with("Groups:");
    if (!wanted) continue;
    line.remove_prefix(line.find(':') + 1);
    // Decimal numbers separated by tabs or spaces; anything else is not an id.
    std::uint64_t value = 0;
    bool in_number = false;
    for (std::size_t i = 0; i <= line.size(); ++i) {
      const char c = i < line.size() ? line[i] : ' ';
      if (c >= '0' && c <= '9') {
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
        in_number = value <= 0xffffffffU;
        if (!in_number) break;
      } else {
        if (in_number) ids.push_back(static_cast<std::uint32_t>(value));
        value = 0;
        in_number = false;
      }
    }
  }
  return ids;
}

bool database_names(std::string_view text, std::uint32_t id, bool primary_group) {
  const std::string wanted = std::to_string(id);
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    std::string_view fields[4];
    std::size_t count = 0;
    for (; count < 4; ++count) {
      const auto colon = line.find(':');
      fields[count] = line.substr(0, colon);
      if (colon == std::string_view::npos) {
        ++count;
        break;
      }
      line.remove_prefix(colon + 1);
    }
    if (count > 2 && fields[2] == wanted) return true;
    if (primary_group && count > 3 && fields[3] == wanted) return true;
  }
  return false;
}

std::optional<std::string> subordinate_range_holding(std::string_view text, std::uint32_t id) {
  while (!text.empty()) {
    const auto end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    // OWNER:START:COUNT; shadow's own parser skips lines of another shape, and so does this.
    const auto first = line.find(':');
    const auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (first == 0 || second == std::string_view::npos) continue;
    auto number = [](std::string_view digits) -> std::optional<std::uint64_t> {
      if (digits.empty() || digits.size() > 10) return std::nullopt;
      std::uint64_t value = 0;
      for (char c : digits) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
      }
      return value;
    };
    const auto start = number(line.substr(first + 1, second - first - 1));
    const auto count = number(line.substr(second + 1));
    if (!start || !count) continue;
    if (id >= *start && id - *start < *count) return std::string(line);
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

std::string module_user_name(std::string_view id) { return "oarbank-" + std::string(id); }

std::string module_passwd_text(const UidLease& lease, const std::string& home) {
  const bool fits = !home.empty() && home.find_first_of(":\n") == std::string::npos;
  return "root:x:0:0:root:/root:/usr/sbin/nologin\n" + module_user_name(lease.id) +
         ":x:" + std::to_string(lease.uid) + ":" + std::to_string(lease.gid) + ":oarbank module " +
         lease.id + ":" + (fits ? home : std::string("/")) +
         ":/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
}

std::string module_group_text(const UidLease& lease) {
  return "root:x:0:\n" + module_user_name(lease.id) + ":x:" + std::to_string(lease.gid) +
         ":\nnogroup:x:65534:\n";
}

}  // namespace oarbank
