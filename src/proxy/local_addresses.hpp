// The node's own addresses, which no module may reach through the proxy (a service bound to
// the node's public address is as local as one on loopback).
#pragma once

#include <optional>
#include <set>
#include <string>

#include "proxy/ip_address.hpp"

namespace oarbank::proxy {

// Every interface address and IPv4 broadcast address (getifaddrs); nullopt if it fails (the
// caller keeps what it had: an empty set would let the node's addresses through).
std::optional<std::set<IpAddress>> node_addresses();

// Attack review (session 15): what the kernel would deliver to this node itself, asked just
// before connecting (RTM_GETROUTE, the route it would take): a local route (`ip route add
// local 203.0.113.0/24 dev lo`, AnyIP), an address added since the last getifaddrs, a
// broadcast, anycast or multicast route. Then the line that says so; nullopt for a route that
// leaves the node, and for no route at all (connecting fails by itself). If the kernel cannot
// be asked, a line saying that: the caller refuses (fail closed).
std::optional<std::string> routed_to_this_node(const IpAddress& address);

}  // namespace oarbank::proxy
