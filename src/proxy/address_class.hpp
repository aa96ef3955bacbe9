// Which addresses the proxy may connect to, whatever a module's allowlist says.
//
// Forbidden always: loopback, unspecified, link-local (cloud metadata 169.254.169.254),
// multicast, broadcast and reserved, the deprecated IPv6 forms (IPv4-compatible, site-local),
// and the node's own addresses. Private (refused unless the node allows private ranges):
// RFC 1918, CGNAT 100.64.0.0/10, benchmarking 198.18.0.0/15 and 2001:2::/48, IETF protocol
// assignments 192.0.0.0/24, 6to4 relays 192.88.99.0/24, IPv6 ULA fc00::/7, local-use NAT64
// 64:ff9b:1::/48, SRv6 SIDs 5f00::/16 (deprecated ORCHID 2001:10::/28 is forbidden).
// IPv6 forms that carry an IPv4 address (v4-mapped, NAT64, 6to4, Teredo, ISATAP) are judged
// by the IPv4 address they carry as well: the worst verdict wins.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "proxy/ip_address.hpp"

namespace oarbank::proxy {

enum class AddressClass { Public, Private, Forbidden };

struct AddressVerdict {
  AddressClass cls = AddressClass::Public;
  std::string reason;  // empty for Public; else why, naming the range
};

// What the proxy knows of the node when it classifies an address.
struct AddressContext {
  std::set<IpAddress> node_addresses;  // getifaddrs: interface and broadcast addresses
  bool allow_private_ranges = false;
  // Test-only: ranges that are permitted even though they are forbidden or private (the
  // loopback tests). Filled only from TestingOnlyExemptions, never from configuration.
  std::vector<IpRange> testing_exemptions;
};

// The class of `address` by the fixed tables and the node's own addresses.
AddressVerdict classify_address(const IpAddress& address,
                                const std::set<IpAddress>& node_addresses);

// Whether the proxy may connect to `address`; on refusal `reason` says why.
bool address_permitted(const IpAddress& address, const AddressContext& context,
                       std::string& reason);

}  // namespace oarbank::proxy
