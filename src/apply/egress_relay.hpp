// Egress only through the proxy (docs/launcher.md, "Egress: the module's own network
// namespace"), for a bare sandbox-exec started as root:
// Landlock's rule is a port, not an address, so the launcher moves itself (the module to be)
// into a network namespace of its own that holds only loopback, and a small relay process
// makes the proxy reachable inside it at proxy_listen. sandbox-run makes its own namespace
// (supervise/module_network.cpp) and runs launch() in it directly, so it never comes here.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace oarbank {

struct PreparedExec;  // apply/prepared_exec.hpp

struct RelaySettings {
  std::string proxy_host;  // proxy_listen: listened on inside, connected to outside
  std::uint16_t proxy_port = 0;
  uid_t uid = 0;  // what the relay runs as once it has joined the node's namespace
  gid_t gid = 0;
  std::size_t max_connections = 128;
};

// Moves this process into a new network namespace (loopback up, nothing else), listens at
// proxy_host:proxy_port there, and starts the relay: a process outside the sandbox that joins
// the node's namespace again, drops root (uid and gid as given, no groups, no capabilities,
// no_new_privs, not dumpable), and joins each connection made to that listener to a new one
// to the proxy in the node's namespace. It ends when this process (the module, once it has
// exec'd) exits. Call it single-threaded, before the identity drop. Throws Error(StepFailed)
// naming the call that failed ("step network failed: ...").
void start_egress_relay(const RelaySettings& settings);

// The network's entry of the list of what a launch makes before the launcher's steps
// (apply/before_launch.hpp), for a bare sandbox-exec: where the prepared policy is
// egress-allowlist and the module is confined by a namespace (root: the same answer as the
// report's, plan/mechanism_network.hpp), start_egress_relay with the node's proxy_listen, the
// module user and proxy_max_tunnels_per_module. Unprivileged, the plan was refused unless
// the node accepts port-only confinement, and then Landlock's port rule is all: nothing here.
void egress_relay_before_exec(const PreparedExec& prepared);

}  // namespace oarbank
