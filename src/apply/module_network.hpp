// Egress only through the proxy (docs/launcher.md, "Egress: the module's own network
// namespace"): Landlock's rule is a port, not an address, so where the agent can (root), an
// egress-allowlist module gets its own network namespace that holds only loopback, with the
// proxy's listening socket created inside it. The proxy itself stays in the node's namespace,
// the only way out.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "sys/unique_fd.hpp"

namespace oarbank {

struct ModuleNetwork {
  UniqueFd netns;     // the module's namespace (the child joins it before the launch); -1: none
  UniqueFd listener;  // the proxy's listening TCP socket for this module
};

// A new network namespace with loopback up and a socket listening on host:port inside it;
// this process stays in (returns to) its own namespace. Throws Error(StepFailed) naming the
// call that failed.
ModuleNetwork make_module_network(const std::string& host, std::uint16_t port);

// The same in `netns`, a namespace made ahead with loopback up (the namespace stock:
// supervise/namespace_stock.hpp): only the listener is made here.
ModuleNetwork module_network_in(UniqueFd netns, const std::string& host, std::uint16_t port);

// A new network namespace holding loopback alone (issue 12: every module run by a root
// sandbox-run gets one; under `net: none` even its abstract unix sockets and its
// NETLINK_ROUTE view are its own). `loopback_up`: lo is brought up (SIOCSIFFLAGS, ~110 us);
// a module whose filter refuses AF_INET and AF_INET6 sockets (`net: none`) could not use it,
// so it stays down there, as the kernel makes it. This process stays in its own namespace.
// Throws Error(StepFailed) naming the call that failed.
ModuleNetwork make_loopback_network(bool loopback_up);

// A listening socket on host:port in this process's namespace (no confinement: Landlock's
// port rule alone). Port 0: one the kernel picks. Throws Error(StepFailed); EADDRINUSE names
// the port.
UniqueFd listen_on(const std::string& host, std::uint16_t port);

// Sets lo up in this thread's network namespace (a new one has it down). Throws
// Error(StepFailed).
void bring_loopback_up();

// host (an IP literal) and port as a socket address; returns its length. Throws
// Error(StepFailed) for a host that is not one.
socklen_t socket_address(const std::string& host, std::uint16_t port, sockaddr_storage& address);

// The port a bound socket listens on (after listen_on(host, 0)). Throws Error(StepFailed).
std::uint16_t listening_port(int fd);

// Joins the namespace (in the child, before the launch drops the capability to). Returns 0 or
// an errno.
int join_network_namespace(int netns_fd);

}  // namespace oarbank
