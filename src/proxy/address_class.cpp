#include "proxy/address_class.hpp"

#include <algorithm>
#include <array>
#include <optional>

namespace oarbank::proxy {
namespace {

struct Rule {
  IpRange range;
  AddressClass cls;
  const char* reason;
};

IpRange range(const char* text) { return *parse_ip_range(text); }

// Checked in order; the first match decides for the address itself (embedded IPv4
// addresses are judged separately and may make it worse).
const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = {
      {range("0.0.0.0/8"), AddressClass::Forbidden, "unspecified address (0.0.0.0/8)"},
      {range("127.0.0.0/8"), AddressClass::Forbidden, "loopback address (127.0.0.0/8)"},
      {range("169.254.0.0/16"), AddressClass::Forbidden,
       "link-local address (169.254.0.0/16, cloud metadata)"},
      {range("224.0.0.0/4"), AddressClass::Forbidden, "multicast address (224.0.0.0/4)"},
      {range("240.0.0.0/4"), AddressClass::Forbidden,
       "reserved or broadcast address (240.0.0.0/4)"},
      {range("10.0.0.0/8"), AddressClass::Private, "private address (10.0.0.0/8)"},
      {range("172.16.0.0/12"), AddressClass::Private, "private address (172.16.0.0/12)"},
      {range("192.168.0.0/16"), AddressClass::Private, "private address (192.168.0.0/16)"},
      {range("100.64.0.0/10"), AddressClass::Private, "shared CGNAT address (100.64.0.0/10)"},
      // Attack review (session 15): IANA's special-purpose ranges that are not globally
      // reachable. The build machine's own network had a service in 198.18.0.0/15, which the
      // proxy reached for a module whose allowlist named an address there. (The documentation
      // ranges, 192.0.2.0/24 and the like, stay public: nothing is ever routed to them.)
      {range("198.18.0.0/15"), AddressClass::Private, "benchmarking address (198.18.0.0/15)"},
      {range("192.0.0.0/24"), AddressClass::Private,
       "IETF protocol assignment address (192.0.0.0/24)"},
      {range("192.88.99.0/24"), AddressClass::Private,
       "deprecated 6to4 relay anycast address (192.88.99.0/24)"},
      {range("::/128"), AddressClass::Forbidden, "unspecified address (::)"},
      {range("::1/128"), AddressClass::Forbidden, "loopback address (::1)"},
      // Deprecated IPv4-compatible addresses (::a.b.c.d): nothing legitimate uses them.
      {range("::/96"), AddressClass::Forbidden, "IPv4-compatible IPv6 address (::/96)"},
      {range("fe80::/10"), AddressClass::Forbidden, "link-local address (fe80::/10)"},
      {range("fec0::/10"), AddressClass::Forbidden, "site-local address (fec0::/10)"},
      {range("ff00::/8"), AddressClass::Forbidden, "multicast address (ff00::/8)"},
      {range("100::/64"), AddressClass::Forbidden, "discard-only address (100::/64)"},
      {range("fc00::/7"), AddressClass::Private, "unique local address (fc00::/7)"},
      {range("64:ff9b:1::/48"), AddressClass::Private, "local-use NAT64 address (64:ff9b:1::/48)"},
      {range("2001:2::/48"), AddressClass::Private, "benchmarking address (2001:2::/48)"},
      {range("2001:10::/28"), AddressClass::Forbidden, "deprecated ORCHID address (2001:10::/28)"},
      {range("5f00::/16"), AddressClass::Private, "SRv6 segment identifier (5f00::/16)"},
  };
  return table;
}

IpAddress v4_at(const IpAddress& address, std::size_t a, std::size_t b, std::size_t c,
                std::size_t d, std::uint8_t mask = 0) {
  return IpAddress::v4_from(static_cast<std::uint8_t>(address.bytes[a] ^ mask),
                            static_cast<std::uint8_t>(address.bytes[b] ^ mask),
                            static_cast<std::uint8_t>(address.bytes[c] ^ mask),
                            static_cast<std::uint8_t>(address.bytes[d] ^ mask));
}

// The IPv4 addresses an IPv6 address carries, with the name of the form.
std::vector<std::pair<IpAddress, const char*>> embedded_ipv4(const IpAddress& a) {
  std::vector<std::pair<IpAddress, const char*>> out;
  if (!a.v6) return out;
  const auto& b = a.bytes;
  if (range("::ffff:0:0/96").contains(a)) out.emplace_back(v4_at(a, 12, 13, 14, 15), "IPv4-mapped");
  if (range("::/96").contains(a)) out.emplace_back(v4_at(a, 12, 13, 14, 15), "IPv4-compatible");
  // SIIT (RFC 6145) ::ffff:0:a.b.c.d.
  if (range("::ffff:0:0:0/96").contains(a))
    out.emplace_back(v4_at(a, 12, 13, 14, 15), "IPv4-translated");
  if (range("64:ff9b::/96").contains(a)) out.emplace_back(v4_at(a, 12, 13, 14, 15), "NAT64");
  // Local-use NAT64 (RFC 8215): private in any case; the IPv4 address is judged where a /96
  // translator prefix puts it (operators choose the length; other placements are not guessed).
  if (range("64:ff9b:1::/48").contains(a))
    out.emplace_back(v4_at(a, 12, 13, 14, 15), "local-use NAT64");
  if (range("2002::/16").contains(a)) out.emplace_back(v4_at(a, 2, 3, 4, 5), "6to4");
  if (range("2001::/32").contains(a)) {
    out.emplace_back(v4_at(a, 4, 5, 6, 7), "Teredo server");
    out.emplace_back(v4_at(a, 12, 13, 14, 15, 0xff), "Teredo client");
  }
  // ISATAP interface identifier ::0:5efe:a.b.c.d or ::200:5efe:a.b.c.d, under any prefix.
  if ((b[8] == 0x00 || b[8] == 0x02) && b[9] == 0x00 && b[10] == 0x5e && b[11] == 0xfe) {
    out.emplace_back(v4_at(a, 12, 13, 14, 15), "ISATAP");
  }
  return out;
}

AddressVerdict classify_direct(const IpAddress& address, const std::set<IpAddress>& node) {
  AddressVerdict verdict;
  for (const auto& rule : rules()) {
    if (rule.range.contains(address)) {
      verdict = {rule.cls, rule.reason};
      break;
    }
  }
  // The fixed ranges name the reason when they forbid (127.0.0.1 is "loopback", also a node
  // address); a node address outside them is forbidden as such.
  if (verdict.cls != AddressClass::Forbidden && node.contains(address)) {
    verdict = {AddressClass::Forbidden, "address of this node"};
  }
  return verdict;
}

}  // namespace

AddressVerdict classify_address(const IpAddress& address,
                                const std::set<IpAddress>& node_addresses) {
  AddressVerdict worst = classify_direct(address, node_addresses);
  for (const auto& [v4, form] : embedded_ipv4(address)) {
    AddressVerdict inner = classify_direct(v4, node_addresses);
    if (inner.cls > worst.cls) {
      worst = {inner.cls, std::string(form) + " IPv6 address embedding " + v4.to_string() + ": " +
                              inner.reason};
    }
  }
  return worst;
}

bool address_permitted(const IpAddress& address, const AddressContext& context,
                       std::string& reason) {
  const AddressVerdict verdict = classify_address(address, context.node_addresses);
  if (verdict.cls == AddressClass::Public) return true;
  if (verdict.cls == AddressClass::Private && context.allow_private_ranges) return true;
  const bool exempt =
      std::any_of(context.testing_exemptions.begin(), context.testing_exemptions.end(),
                  [&](const IpRange& r) { return r.contains(address); });
  if (exempt) return true;
  reason = address.to_string() + " is refused: " + verdict.reason;
  if (verdict.cls == AddressClass::Private)
    reason += " (this node does not allow private ranges: proxy_allow_private_ranges)";
  return false;
}

}  // namespace oarbank::proxy
