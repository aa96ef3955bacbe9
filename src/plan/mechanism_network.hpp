// The network mechanism's pure half (plan/mechanism.hpp): net none, egress-allowlist and
// egress-any. Its rows of the capability table (net.egress-allowlist, net.egress-any,
// egress.netns) with their evaluators, how an egress module is kept to the proxy per launch
// mode, its plan section (Landlock's port rule), the proxy variables of the module's
// environment, its --explain part (egress_confinement) and its seccomp rules on inet sockets.
// The apply half: apply/module_network.* (the module's namespace: sandbox-run's step network,
// and a bare sandbox-exec's), apply/egress_relay.* and apply/relay_loop.* (sandbox-exec), the
// proxy (src/proxy/).
#pragma once

#include <string>

#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "plan/mechanism.hpp"
#include "plan/seccomp_rules.hpp"
#include "probe/kernel_features.hpp"

namespace oarbank {

// How an egress-allowlist module is kept to the proxy, in every launch mode (docs/launcher.md,
// "Egress: the module's own network namespace"). One answer for the launcher, sandbox-run,
// sandbox-check and the report.
enum class EgressConfinement {
  Namespace,  // root: the module's own network namespace, only loopback, the proxy inside it
  PortOnly,   // not root (or no namespaces), accepted by the node: Landlock's port rule alone
  Refused,    // not root (or no namespaces), and the node does not accept port only
};
EgressConfinement egress_confinement(const KernelFeatures& features, const NodeConfig& config);

// Why the module cannot have a network namespace of its own here ("" when it can). Also the
// world.net row's answer (capabilities.cpp).
std::string why_no_namespace(const KernelFeatures& features);

// Whether the module runs in a network namespace of its own (only loopback; an egress module's
// proxy listener inside it): an egress module's wherever a namespace confines it (root,
// module_world or not), every other module's where its world has its own namespaces (the
// filter's +own-namespaces). The one answer for the plan (Plan::own_network_namespace), which
// sandbox-run's step network, --explain's world and the module's own sysfs then read.
bool own_network_namespace(const Policy& policy, const KernelFeatures& features,
                           const NodeConfig& config, const seccomp::FilterVariant& filter);

// Whether the filter opens IPv4 and IPv6 sockets to this policy (seccomp::variant_for), whose
// further rules on them are this mechanism's socket_rules.
bool inet_sockets_allowed(const Policy& policy);

extern const Mechanism kNetworkMechanism;

}  // namespace oarbank
