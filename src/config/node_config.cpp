#include "config/node_config.hpp"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "policy/paths.hpp"
#include "policy/strict_json.hpp"
#include "policy/suggest.hpp"
#include "sys/landlock_abi.hpp"

namespace oarbank {

ConfigError::ConfigError(const std::string& source, const std::string& pointer,
                         const std::string& problem)
    : Error(ErrorKind::Config, std::nullopt, pointer,
            "configuration " + printable(source) + ": " +
                (pointer.empty() ? std::string("(document)") : printable(pointer)) + ": " +
                printable(problem)) {}

namespace {

using nlohmann::json;
constexpr std::size_t kMaxConfigBytes = 1 << 20;
constexpr int kMaxConfigDepth = 16;

struct Reader {
  const std::string& source;
  [[noreturn]] void fail(const std::string& pointer, const std::string& problem) const {
    throw ConfigError(source, pointer, problem);
  }
  std::uint64_t unsigned_int(const json& value, const std::string& pointer, std::uint64_t min,
                             std::uint64_t max) const {
    if (!value.is_number_integer() ||
        (!value.is_number_unsigned() && value.get<std::int64_t>() < 0)) {
      fail(pointer, "must be an integer from " + std::to_string(min) + " to " +
                        std::to_string(max) + ", not " + std::string(json_type_name(value)));
    }
    auto number = value.get<std::uint64_t>();
    if (number < min || number > max) {
      fail(pointer, "must be from " + std::to_string(min) + " to " + std::to_string(max));
    }
    return number;
  }
  const std::string& string(const json& value, const std::string& pointer) const {
    if (!value.is_string())
      fail(pointer, "must be a string, not " + std::string(json_type_name(value)));
    return value.get_ref<const std::string&>();
  }
  std::string path(const json& value, const std::string& pointer) const {
    std::string problem;
    auto normalized = normalize_policy_path(string(value, pointer), problem);
    if (!normalized) fail(pointer, problem);
    return *normalized;
  }
};

// "IP", "IPv4:PORT" or "[IPv6]:PORT", as the proxy's resolver takes them.
bool dns_server_is_valid(const std::string& text) {
  std::array<unsigned char, 16> buf{};
  auto port_ok = [](const std::string& port) {
    return !port.empty() && port.size() <= 5 &&
           port.find_first_not_of("0123456789") == std::string::npos && std::stoul(port) >= 1 &&
           std::stoul(port) <= 65535;
  };
  if (text.find('\0') != std::string::npos) return false;
  if (inet_pton(AF_INET, text.c_str(), buf.data()) == 1) return true;
  if (inet_pton(AF_INET6, text.c_str(), buf.data()) == 1) return true;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find("]:");
    return close != std::string::npos &&
           inet_pton(AF_INET6, text.substr(1, close - 1).c_str(), buf.data()) == 1 &&
           port_ok(text.substr(close + 2));
  }
  auto colon = text.rfind(':');
  return colon != std::string::npos &&
         inet_pton(AF_INET, text.substr(0, colon).c_str(), buf.data()) == 1 &&
         port_ok(text.substr(colon + 1));
}

}  // namespace

NodeConfig parse_node_config(std::string_view text, const std::string& source) {
  json document;
  StrictJsonError error;
  // Comments allowed: the shipped /etc/oarbank/agent.json explains each key in place.
  if (!parse_strict_json(text, kMaxConfigBytes, kMaxConfigDepth, document, error,
                         JsonComments::Allow)) {
    throw ConfigError(source, error.pointer, error.problem);
  }
  Reader r{source};
  if (!document.is_object()) r.fail("", "must be a JSON object");
  NodeConfig config;
  for (const auto& [key, value] : document.items()) {
    const std::string pointer = json_pointer_append("", key);
    if (key == "module_user") {
      if (!value.is_object()) r.fail(pointer, "must be an object {\"uid\": N, \"gid\": N}");
      for (const auto& [field, member] : value.items()) {
        const std::string sub = json_pointer_append(pointer, field);
        // uid 0 is refused: a uid-0 module owns most of the system's files.
        if (field == "uid") {
          config.module_uid =
              static_cast<std::uint32_t>(r.unsigned_int(member, sub, 1, 4294967294U));
        } else if (field == "gid") {
          config.module_gid =
              static_cast<std::uint32_t>(r.unsigned_int(member, sub, 1, 4294967294U));
        } else {
          r.fail(sub, "unknown field" + did_you_mean(field, {"uid", "gid"}));
        }
      }
    } else if (key == "module_users") {
      if (value.is_null()) {
        config.module_users.reset();
        continue;
      }
      if (!value.is_object()) {
        r.fail(pointer,
               "must be null or an object {\"first\": N, \"last\": N, \"reclaim_after_days\": N}");
      }
      ModuleUserRange range;
      for (const auto& [field, member] : value.items()) {
        const std::string sub = json_pointer_append(pointer, field);
        // 0 is never leased (root); 4294967295 is (uid_t)-1, "no change" to chown and setresuid.
        if (field == "first") {
          range.first = static_cast<std::uint32_t>(r.unsigned_int(member, sub, 1, 4294967294U));
        } else if (field == "last") {
          range.last = static_cast<std::uint32_t>(r.unsigned_int(member, sub, 1, 4294967294U));
        } else if (field == "reclaim_after_days") {
          range.reclaim_after_days =
              static_cast<std::uint32_t>(r.unsigned_int(member, sub, 1, 36500));
        } else {
          r.fail(sub,
                 "unknown field" + did_you_mean(field, {"first", "last", "reclaim_after_days"}));
        }
      }
      if (range.last < range.first) {
        r.fail(json_pointer_append(pointer, "last"),
               "must not be below first (" + std::to_string(range.first) + ")");
      }
      config.module_users = range;
    } else if (key == "proxy_listen") {
      const auto& text_value = r.string(value, pointer);
      const std::string form = "must be IP:PORT, e.g. \"127.0.0.1:3128\" or \"[::1]:3128\"";
      // A NUL would end the C string inet_pton reads: "127.0.0.1\0junk:3128" must not pass.
      for (unsigned char c : text_value) {
        if (c < 0x20 || c == 0x7f) r.fail(pointer, "contains a control character");
      }
      std::string host;
      std::string port_text;
      std::array<unsigned char, 16> buf{};
      if (!text_value.empty() && text_value.front() == '[') {
        auto close = text_value.find(']');
        if (close == std::string::npos || close + 1 >= text_value.size() ||
            text_value[close + 1] != ':') {
          r.fail(pointer, form);
        }
        host = text_value.substr(1, close - 1);
        port_text = text_value.substr(close + 2);
        if (inet_pton(AF_INET6, host.c_str(), buf.data()) != 1) {
          r.fail(pointer, "not an IPv6 address between the brackets; " + form);
        }
      } else {
        auto colon = text_value.rfind(':');
        if (colon == std::string::npos) r.fail(pointer, form);
        host = text_value.substr(0, colon);
        port_text = text_value.substr(colon + 1);
        if (host.find(':') != std::string::npos) {
          r.fail(pointer, "an IPv6 address must be written in brackets, e.g. \"[::1]:3128\"");
        }
        if (inet_pton(AF_INET, host.c_str(), buf.data()) != 1) r.fail(pointer, form);
      }
      if (port_text.empty() || port_text.size() > 5 ||
          port_text.find_first_not_of("0123456789") != std::string::npos ||
          std::stoul(port_text) == 0 || std::stoul(port_text) > 65535) {
        r.fail(pointer, "port must be a number from 1 to 65535");
      }
      // Session 16's review: a module reaches the proxy inside its own network namespace,
      // which holds only loopback, so 192.0.2.2:3128 passed sandbox-check and the report's
      // --verify (which listens on 127.0.0.1) and then failed every launch (EADDRNOTAVAIL);
      // and a proxy on a network address serves that network. Loopback, or the wildcard.
      const bool v6 = host.find(':') != std::string::npos;
      static constexpr std::array<unsigned char, 16> kLoopback6{0, 0, 0, 0, 0, 0, 0, 0,
                                                                0, 0, 0, 0, 0, 0, 0, 1};
      const bool loopback = v6 ? buf == kLoopback6 : buf[0] == 127;
      const bool wildcard =
          std::all_of(buf.begin(), buf.end(), [](unsigned char b) { return b == 0; });
      if (!loopback && !wildcard) {
        r.fail(pointer,
               "must be a loopback address (127.0.0.0/8 or [::1]) or the wildcard "
               "(0.0.0.0, [::]): a module reaches the proxy inside its own network "
               "namespace, which holds only loopback");
      }
      config.proxy_host = host;
      config.proxy_port = static_cast<std::uint16_t>(std::stoul(port_text));
    } else if (key == "broker_socket") {
      config.broker_socket = r.path(value, pointer);
      // sun_path holds 108 bytes with the terminating NUL.
      if (config.broker_socket.size() > 107)
        r.fail(pointer, "is longer than a unix socket path can be (107 bytes)");
    } else if (key == "hard_limits") {
      if (!value.is_boolean()) r.fail(pointer, "must be true or false");
      config.hard_limits = value.get<bool>();
    } else if (key == "pids_max") {
      config.pids_max = value.is_null() ? std::nullopt
                                        : std::optional(r.unsigned_int(value, pointer, 1, 4194304));
    } else if (key == "cgroup_parent") {
      config.cgroup_parent = value.is_null() ? std::nullopt : std::optional(r.path(value, pointer));
      // Issue 16: a cgroup is named as /proc/self/cgroup names it, below the cgroup2 mount. A
      // file system path (/sys/fs/cgroup/unified) names no cgroup there: it would be taken as
      // missing and the node would fall back to process groups without a word.
      if (config.cgroup_parent) {
        const std::string& parent = *config.cgroup_parent;
        if (parent == "/sys" || parent.starts_with("/sys/") || parent == "/proc" ||
            parent.starts_with("/proc/")) {
          std::string suggestion;
          for (const char* mount : {"/sys/fs/cgroup/unified/", "/sys/fs/cgroup/"}) {
            if (parent.starts_with(mount) && parent.size() > std::string(mount).size()) {
              suggestion =
                  "; here perhaps \"" + parent.substr(std::string(mount).size() - 1) + "\"";
              break;
            }
          }
          r.fail(pointer,
                 "is a file system path; write the cgroup's path below the cgroup2 mount, as "
                 "/proc/self/cgroup shows it (e.g. \"/system.slice/oarbank-agent.service\")" +
                     suggestion);
        }
      }
    } else if (key == "landlock_abi_max") {
      config.landlock_abi_max =
          value.is_null() ? std::nullopt
                          : std::optional(static_cast<int>(r.unsigned_int(
                                value, pointer, 0, landlock::number(landlock::kNewestKnownAbi))));
    } else if (key == "writable_roots") {
      if (!value.is_array()) r.fail(pointer, "must be a list of absolute paths");
      config.writable_roots.clear();
      for (std::size_t i = 0; i < value.size(); ++i) {
        const std::string item = json_pointer_append(pointer, std::to_string(i));
        std::string root = r.path(value[i], item);
        if (root == "/") r.fail(item, "must not be / (every directory would be below it)");
        config.writable_roots.push_back(std::move(root));
      }
    } else if (key == "proxy_dns_servers") {
      if (!value.is_array()) r.fail(pointer, "must be a list of \"IP\" or \"IP:PORT\"");
      config.proxy_dns_servers.clear();
      for (std::size_t i = 0; i < value.size(); ++i) {
        const std::string item = json_pointer_append(pointer, std::to_string(i));
        const std::string& server = r.string(value[i], item);
        if (!dns_server_is_valid(server)) {
          r.fail(item, "must be an IP address, \"IPv4:PORT\" or \"[IPv6]:PORT\"");
        }
        config.proxy_dns_servers.push_back(server);
      }
    } else if (key == "proxy_max_tunnels_per_module") {
      config.proxy_max_tunnels_per_module = r.unsigned_int(value, pointer, 1, 1000000);
    } else if (key == "proxy_max_tunnels_total") {
      config.proxy_max_tunnels_total = r.unsigned_int(value, pointer, 1, 1000000);
    } else if (key == "proxy_allow_private_ranges") {
      if (!value.is_boolean()) r.fail(pointer, "must be true or false");
      config.proxy_allow_private_ranges = value.get<bool>();
    } else if (key == "accept_port_only_egress") {
      if (!value.is_boolean()) r.fail(pointer, "must be true or false");
      config.accept_port_only_egress = value.get<bool>();
    } else if (key == "module_world") {
      if (!value.is_boolean()) r.fail(pointer, "must be true or false");
      config.module_world = value.get<bool>();
    } else if (key == "denial_audit") {
      const std::string& mode = r.string(value, pointer);
      if (mode != "off" && mode != "if-enabled" && mode != "enable") {
        r.fail(pointer, "must be \"off\", \"if-enabled\" or \"enable\"");
      }
      config.denial_audit = mode;
    } else if (key == "module_mounts") {
      if (!value.is_boolean()) r.fail(pointer, "must be true or false");
      config.module_mounts = value.get<bool>();
    } else if (key == "module_shm_max_bytes") {
      // At least a page per semaphore's worth; at most 1 TiB (a typo, not a size).
      config.module_shm_max_bytes = r.unsigned_int(value, pointer, 65536, 1ULL << 40);
    } else {
      // The keys the configuration knows are the ones it writes out.
      const nlohmann::json defaults = node_config_to_json(NodeConfig{});
      std::vector<std::string> known;
      for (auto it = defaults.begin(); it != defaults.end(); ++it) known.push_back(it.key());
      r.fail(pointer, "unknown key" + did_you_mean(key, known));
    }
  }
  // The shared module_user (runs without --id, a bare sandbox-exec) must never be leased to
  // one module id: that module would get the own-user allowances over every shared run.
  if (const auto& range = config.module_users) {
    for (auto [name, id] : {std::pair{"uid", config.module_uid}, {"gid", config.module_gid}}) {
      if (id >= range->first && id <= range->last) {
        r.fail("/module_users", "must not contain module_user's " + std::string(name) + " " +
                                    std::to_string(id) + " (" + std::to_string(range->first) + "-" +
                                    std::to_string(range->last) + ")");
      }
    }
  }
  return config;
}

NodeConfig load_node_config(const std::optional<std::string>& explicit_path) {
  std::string path;
  bool must_exist = true;
  if (explicit_path) {
    path = *explicit_path;
  } else if (const char* env = std::getenv(kConfigEnvVar); env != nullptr && *env != '\0') {
    path = env;
  } else {
    path = kDefaultConfigPath;
    must_exist = false;
  }
  struct stat st {};
  if (!must_exist && ::stat(path.c_str(), &st) != 0 && errno == ENOENT) return NodeConfig{};
  std::string text;
  std::string problem;
  if (!read_small_file(path, kMaxConfigBytes, text, problem)) throw ConfigError(path, "", problem);
  return parse_node_config(text, path);
}

json node_config_to_json(const NodeConfig& config) {
  std::string proxy = config.proxy_host.find(':') != std::string::npos
                          ? "[" + config.proxy_host + "]"
                          : config.proxy_host;
  return json{
      {"module_user", {{"uid", config.module_uid}, {"gid", config.module_gid}}},
      {"module_users", config.module_users
                           ? json{{"first", config.module_users->first},
                                  {"last", config.module_users->last},
                                  {"reclaim_after_days", config.module_users->reclaim_after_days}}
                           : json(nullptr)},
      {"proxy_listen", proxy + ":" + std::to_string(config.proxy_port)},
      {"broker_socket", config.broker_socket},
      {"hard_limits", config.hard_limits},
      {"pids_max", config.pids_max ? json(*config.pids_max) : json(nullptr)},
      {"cgroup_parent", config.cgroup_parent ? json(*config.cgroup_parent) : json(nullptr)},
      {"landlock_abi_max",
       config.landlock_abi_max ? json(*config.landlock_abi_max) : json(nullptr)},
      {"writable_roots", config.writable_roots},
      {"proxy_dns_servers", config.proxy_dns_servers},
      {"proxy_allow_private_ranges", config.proxy_allow_private_ranges},
      {"proxy_max_tunnels_per_module", config.proxy_max_tunnels_per_module},
      {"proxy_max_tunnels_total", config.proxy_max_tunnels_total},
      {"accept_port_only_egress", config.accept_port_only_egress},
      {"module_world", config.module_world},
      {"denial_audit", config.denial_audit},
      {"module_mounts", config.module_mounts},
      {"module_shm_max_bytes", config.module_shm_max_bytes},
  };
}

}  // namespace oarbank
