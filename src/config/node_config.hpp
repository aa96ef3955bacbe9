// The node's configuration: what module authors must not choose. Keys: docs/configuration.md.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sys/error.hpp"

namespace oarbank {

inline constexpr const char* kDefaultConfigPath = "/etc/oarbank/agent.json";
inline constexpr const char* kConfigEnvVar = "OARBANK_AGENT_CONFIG";

// Issue 12, "Its own user": the ids sandbox-run (as root) leases to module ids, one uid and
// the gid of the same number each (supervise/uid_registry.hpp). Default: the range systemd
// reserves for dynamic users (DynamicUser=); numbers the user database names are skipped.
struct ModuleUserRange {
  std::uint32_t first = 61184;
  std::uint32_t last = 65519;
  // A lease whose id has not run for this many days may be reclaimed (sandbox-ctl reclaim),
  // once no file of its uid is left in the directories its runs were given.
  std::uint32_t reclaim_after_days = 90;
  friend bool operator==(const ModuleUserRange&, const ModuleUserRange&) = default;
};

struct NodeConfig {
  // The uid and gid a module runs as when the launcher starts as root; never 0: every bare
  // sandbox-exec's module, and sandbox-run's where module_users is null (off).
  std::uint32_t module_uid = 65534;
  std::uint32_t module_gid = 65534;
  // sandbox-run as root: each module id its own uid and gid from this range; nullopt: every
  // module runs as module_uid, as before issue 12.
  std::optional<ModuleUserRange> module_users = ModuleUserRange{};
  // Where the agent's egress proxy listens (an IP literal and a port).
  std::string proxy_host = "127.0.0.1";
  std::uint16_t proxy_port = 3128;
  // The broker's unix socket, given to modules with the broker grant as OARBANK_BROKER.
  std::string broker_socket = "/run/oarbank/broker.sock";
  // Turn a policy's reservations into cgroup hard limits (cpu.max, memory.max).
  bool hard_limits = false;
  // pids.max of each module's cgroup leaf; nullopt: no limit is written.
  std::optional<std::uint64_t> pids_max = 1024;
  // The cgroup (a path under the cgroup2 mount) under which module leaves are made; nullopt:
  // the agent's own cgroup when systemd delegated it.
  std::optional<std::string> cgroup_parent;
  // Highest Landlock ABI used, for reproducible fleets and tests of older kernels' behaviour;
  // nullopt: the kernel's.
  std::optional<int> landlock_abi_max;
  // Where sandbox-run may create a policy's missing work and temp directories (as root, then
  // given to the module user): strictly below one of these. A policy names its own paths, so
  // without this a module author could have root make a module-writable directory anywhere
  // (a systemd drop-in directory under /run, say). Elsewhere a missing directory is 70.
  std::vector<std::string> writable_roots = {"/var/lib/oarbank", "/tmp"};
  // The DNS servers the egress proxy asks ("IP", "IP:PORT" or "[IPv6]:PORT"); empty: the
  // system's resolv.conf.
  std::vector<std::string> proxy_dns_servers;
  // Let the proxy reach private ranges (RFC 1918, CGNAT, ULA) an allowlist names.
  bool proxy_allow_private_ranges = false;
  // Concurrent connections the proxy holds for one module, and in all (each process hosts
  // one module's proxy, so the smaller one binds); beyond them a client gets 503.
  std::uint64_t proxy_max_tunnels_per_module = 128;
  std::uint64_t proxy_max_tunnels_total = 1024;
  // Run egress-allowlist modules where the launcher cannot give them a network namespace of
  // their own (it is not root), confined by Landlock's port rule alone: such a module can
  // reach any host that listens on its proxy port. false: such launches are refused (70).
  bool accept_port_only_egress = false;
  // Issue 12: a root sandbox-run makes each module a world of its own (its own IPC namespace,
  // a network namespace for every module), and the filter allows what that makes safe
  // (docs/sandbox-run.md, "What a module sees"). false: modules share the node's IPC and
  // (without egress) network namespaces, and the filter refuses as for a bare sandbox-exec.
  bool module_world = true;
  // Issue 14: whether sandbox-run reads Landlock's denials from the kernel's audit log
  // (docs/denials.md). "if-enabled": where audit is already on; "enable": turns audit on for the
  // node when it is off (a global change the operator asks for here, and leaves on); "off".
  std::string denial_audit = "if-enabled";
  // sandbox-run started as root gives each module a mount namespace of its own (issue 12,
  // docs/sandbox-run.md "What a module sees"): a private /dev/shm, /proc with
  // hidepid=invisible, a private devpts, the writable directories noexec. false: the module
  // runs on the node's mounts (the report's mounts.* rows say unavailable).
  bool module_mounts = true;
  // The size of each module's private /dev/shm (a tmpfs), in bytes; the policy's memory
  // reservation bounds it further.
  std::uint64_t module_shm_max_bytes = 64ULL << 20;

  friend bool operator==(const NodeConfig&, const NodeConfig&) = default;
};

// An invalid configuration: an Error of kind Config (sys/error.hpp) whose where() is the JSON
// Pointer of the offending value ("" for the whole document); what() is "configuration
// SOURCE: POINTER: PROBLEM".
class ConfigError : public Error {
 public:
  ConfigError(const std::string& source, const std::string& pointer, const std::string& problem);
  [[nodiscard]] const std::string& pointer() const { return where(); }
};

// Parses a configuration document; `source` names it in errors. Throws ConfigError.
NodeConfig parse_node_config(std::string_view text, const std::string& source);

// The configuration in effect: `explicit_path` (--config) if given, else the file named by
// OARBANK_AGENT_CONFIG, else /etc/oarbank/agent.json if it exists, else built-in defaults.
// A file that was named explicitly must exist.
NodeConfig load_node_config(const std::optional<std::string>& explicit_path);

nlohmann::json node_config_to_json(const NodeConfig& config);

}  // namespace oarbank
