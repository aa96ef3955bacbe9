// The node's own addresses, which no module may reach through the proxy (a service bound to
// the node's public address is as local as one on loopback).
#pragma once

#include <set>

#include "proxy/ip_address.hpp"

namespace oarbank::proxy {

// Every interface address and IPv4 broadcast address (getifaddrs). Empty if it fails: the
// fixed ranges still apply.
std::set<IpAddress> node_addresses();

}  // namespace oarbank::proxy
