#include "plan/mechanism_network.hpp"

#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "sys/landlock_abi.hpp"

namespace oarbank {

using nlohmann::json;

std::string why_no_namespace(const KernelFeatures& features) {
  if (!features.network_namespaces_probed) return "network namespaces were not probed";
  if (!features.running_as_root) {
    return "the agent is not root, so it cannot give the module a network namespace of its own";
  }
  if (!features.network_namespaces) return "this node cannot create network namespaces";
  return "";
}

EgressConfinement egress_confinement(const KernelFeatures& features, const NodeConfig& config) {
  if (why_no_namespace(features).empty()) return EgressConfinement::Namespace;
  return config.accept_port_only_egress ? EgressConfinement::PortOnly : EgressConfinement::Refused;
}

bool own_network_namespace(const Policy& policy, const KernelFeatures& features,
                           const NodeConfig& config, const seccomp::FilterVariant& filter) {
  if (policy.net == NetMode::EgressAllowlist) {
    return egress_confinement(features, config) == EgressConfinement::Namespace;
  }
  return filter.own_namespaces;
}

bool inet_sockets_allowed(const Policy& policy) {
  // egress-any is refused before a filter is chosen; only egress-allowlist opens inet.
  return policy.net == NetMode::EgressAllowlist;
}

namespace {

// net.egress-allowlist: Landlock's port rule (ABI 4) and seccomp, and what keeps the module to
// the proxy's address, per launch mode.
CapabilityVerdict egress_allowlist_row(const CapabilityEntry& entry, const KernelFeatures& features,
                                       const NodeConfig& config) {
  const CapabilityRow row = entry.row;
  auto landlock = landlock_row(entry, features, config);
  if (landlock.status != CapabilityStatus::Enforced) return landlock;
  switch (egress_confinement(features, config)) {
    case EgressConfinement::Namespace:
      return {row, CapabilityStatus::Enforced,
              landlock.reason +
                  "; each module gets a network namespace holding only loopback, the proxy "
                  "reachable inside it at proxy_listen (sandbox-run: the proxy's listener; "
                  "sandbox-exec: a relay to proxy_listen), so no other host is reachable"};
    case EgressConfinement::PortOnly:
      return {row, CapabilityStatus::PortOnly,
              "port only, accepted by this node's configuration (accept_port_only_egress): " +
                  why_no_namespace(features) +
                  "; a module can reach any host that listens on its proxy port. sandbox-run: "
                  "a proxy port of its own that accepts connections from the module's "
                  "processes alone; sandbox-exec: proxy_listen's port, shared: any local "
                  "process can connect there and be judged by that proxy's allowlist"};
    case EgressConfinement::Refused:
      break;
  }
  return {row, CapabilityStatus::Unavailable,
          why_no_namespace(features) +
              ", and this node's configuration does not accept port-only confinement "
              "(accept_port_only_egress is false; with it a module could reach any host that "
              "listens on the proxy's port)"};
}

// Made by sandbox-run (apply/module_network.cpp) and by a bare sandbox-exec
// (apply/egress_relay.cpp) when they run as root.
CapabilityVerdict netns_row(const CapabilityEntry& entry, const KernelFeatures& features,
                            const NodeConfig& config) {
  const std::string why = why_no_namespace(features);
  if (why.empty()) return {entry.row, CapabilityStatus::Enforced, std::string(entry.reason)};
  return {entry.row, CapabilityStatus::Unavailable,
          why + (config.accept_port_only_egress ? "; egress modules run confined by port alone "
                                                  "(accept_port_only_egress)"
                                                : "; egress modules are refused "
                                                  "(accept_port_only_egress is false)")};
}

using landlock::Abi;
using Fact = CapabilityFact;
using Row = CapabilityRow;

// plan_rank: see capabilities.cpp's kCoreRows.
constexpr CapabilityEntry kNetworkRows[] = {
    {Row::EgressAllowlist, "net.egress-allowlist",
     "net.egress-allowlist, no loopback, no link-local", Abi::V4, Fact::NetworkNamespace, "",
     egress_allowlist_row,
     [](const Policy& p, const NodeConfig&) { return p.net == NetMode::EgressAllowlist; }, 2, "",
     kEnforcedOrUnavailable | status_bit(CapabilityStatus::PortOnly),
     "seccomp filters, and what keeps the module to the proxy's address, the same in every launch "
     "mode: **enforced** where the agent runs as root and can create network namespaces "
     "(`sandbox-run`: the module's namespace with the proxy's listener inside; `sandbox-exec`: the "
     "module's namespace with a relay to `proxy_listen`, `docs/launcher.md`); otherwise "
     "**unavailable**, naming `accept_port_only_egress`, or **port only** where the node's "
     "configuration sets that key (Landlock's port rule alone; `sandbox-run`'s port admits the "
     "module's processes alone, a bare `sandbox-exec`'s is `proxy_listen`'s, shared). The reason "
     "says which, per launch mode",
     "its `net` is `egress-allowlist`"},
    {Row::EgressAny, "net.egress-any", "net.egress-any", Abi::Unsupported, Fact::None, "",
     never_row, [](const Policy& p, const NodeConfig&) { return p.net == NetMode::EgressAny; }, 3,
     "Landlock filters ports, not addresses, so loopback and link-local cannot be refused",
     kAlwaysUnavailable, "never: Landlock filters ports, not addresses",
     "its `net` is `egress-any` (so it is refused on every node)"},
    {Row::EgressNetns, "egress.netns", "egress confinement: network namespace (else port only)",
     Abi::Unsupported, Fact::NetworkNamespace, "", netns_row, nullptr, 0,
     "sandbox-run and sandbox-exec give each egress-allowlist module a network namespace "
     "holding only loopback, the proxy reachable inside it",
     kEnforcedOrUnavailable,
     "enforced where the agent runs as root and can create network namespaces: `sandbox-run` and a "
     "bare `sandbox-exec` give each `egress-allowlist` module a namespace holding only loopback, "
     "with the proxy reachable inside it, so no other host is reachable even on the proxy's port. "
     "Otherwise unavailable, and the reason says whether egress modules are refused or run port "
     "only (`accept_port_only_egress`)",
     ""},
};

// Landlock's port rule: TCP connect to the proxy's port alone (egress-allowlist).
void plan_section(const MechanismInput& input, Plan& plan) {
  if (input.policy.net == NetMode::EgressAllowlist) {
    plan.landlock.port_rules.push_back(
        LandlockPortRule{input.config.proxy_port, LANDLOCK_ACCESS_NET_CONNECT_TCP,
                         "egress-allowlist: TCP connect to the agent's proxy port alone"});
  }
}

std::string proxy_url(const NodeConfig& config) {
  const bool v6 = config.proxy_host.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}", v6 ? "[" : "", config.proxy_host, v6 ? "]" : "",
                     config.proxy_port);
}

// The proxy's address for clients that read the proxy variables (egress-allowlist).
void environment(const Policy& policy, const NodeConfig& config, std::vector<std::string>& env) {
  if (policy.net == NetMode::EgressAllowlist) {
    const std::string url = proxy_url(config);
    for (const char* name : {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"}) {
      env.push_back(std::string(name) + "=" + url);
    }
    // Node.js 24+ reads the proxy variables only when told to.
    env.emplace_back("NODE_USE_ENV_PROXY=1");
  }
}

// What keeps an egress module to the proxy, per launch mode (the same answer as the
// net.egress-allowlist row's).
json egress_confinement_to_json(const KernelFeatures& features, const NodeConfig& config) {
  switch (egress_confinement(features, config)) {
    case EgressConfinement::Namespace:
      return {{"mode", "network namespace"},
              {"sandbox-exec",
               "the launcher moves into a network namespace of its own (only loopback) and a "
               "relay outside it, as the module user, joins connections to proxy_listen inside "
               "to the proxy in the node's namespace; the relay ends with the module"},
              {"sandbox-run",
               "the module's own network namespace (only loopback), the proxy's listener inside "
               "it at proxy_listen"}};
    case EgressConfinement::PortOnly:
      return {{"mode", "port only"},
              {"accepted_by", "accept_port_only_egress"},
              {"sandbox-exec",
               "Landlock's port rule alone; proxy_listen's port is shared with every local "
               "process"},
              {"sandbox-run",
               "Landlock's port rule alone, on a proxy port of the module's own that admits its "
               "processes alone"}};
    case EgressConfinement::Refused:
      break;
  }
  return {{"mode", "refused"}};
}

void explain(const MechanismInput& input, const Plan&, json& out) {
  if (input.policy.net == NetMode::EgressAllowlist) {
    out["egress_confinement"] = egress_confinement_to_json(input.features, input.config);
  }
}

// inet sockets (inet_sockets_allowed): what Landlock's TCP port rule cannot see is refused.
void socket_rules(const seccomp::FilterVariant& variant, std::vector<seccomp::Rule>& rules) {
  using seccomp::Compare;
  using seccomp::kSockTypeMask;
  using seccomp::refuse_unless_in;
  using seccomp::Rule;
  if (!variant.inet) return;
  for (std::uint64_t family : {std::uint64_t{AF_INET}, std::uint64_t{AF_INET6}}) {
    // Streams only: Landlock's port rules govern TCP alone, so UDP, raw and SCTP sockets
    // would escape them.
    for (std::uint64_t type = 0; type <= kSockTypeMask; ++type) {
      if (type == SOCK_STREAM) continue;
      rules.push_back(
          Rule{"socket",
               -1,
               EPROTONOSUPPORT,
               {{0, Compare::Equal, family, 0}, {1, Compare::MaskedEqual, type, kSockTypeMask}},
               "egress-allowlist: stream sockets only (Landlock governs TCP alone; no DNS: the "
               "module names hosts to the agent's proxy, which resolves them)"});
    }
    // SOCK_STREAM with IPPROTO_SCTP or IPPROTO_MPTCP is not TCP to Landlock either.
    refuse_unless_in(rules, "socket", 2, {0, IPPROTO_TCP}, IPPROTO_TCP, EPROTONOSUPPORT,
                     {{0, Compare::Equal, family, 0}},
                     "egress-allowlist: TCP only (SCTP and MPTCP streams escape Landlock's "
                     "TCP port rules)");
  }
  // TCP Fast Open connects inside sendto/sendmsg without the connect hook Landlock uses
  // (landlock-lsm/linux#41). EOPNOTSUPP is what the kernel answers when client TFO is off,
  // so clients fall back to connect().
  const char* tfo_why =
      "MSG_FASTOPEN connects without passing Landlock's connect check (landlock-lsm/linux#41)";
  rules.push_back(Rule{
      "sendto", -1, EOPNOTSUPP, {{3, Compare::MaskedEqual, MSG_FASTOPEN, MSG_FASTOPEN}}, tfo_why});
  rules.push_back(Rule{
      "sendmsg", -1, EOPNOTSUPP, {{2, Compare::MaskedEqual, MSG_FASTOPEN, MSG_FASTOPEN}}, tfo_why});
  rules.push_back(Rule{"sendmmsg",
                       -1,
                       EOPNOTSUPP,
                       {{3, Compare::MaskedEqual, MSG_FASTOPEN, MSG_FASTOPEN}},
                       tfo_why});
}

}  // namespace

constinit const Mechanism kNetworkMechanism{
    "network", kNetworkRows, plan_section, environment, explain, socket_rules,
};

}  // namespace oarbank
