// An IP address as plain bytes, and a CIDR range: the pure vocabulary of the proxy's address
// checks. Kept free of Asio so the classification and decision code stays pure and fuzzable.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace oarbank::proxy {

struct IpAddress {
  bool v6 = false;
  // IPv4 in bytes[0..3] (the rest zero), IPv6 in all 16, network byte order.
  std::array<std::uint8_t, 16> bytes{};

  static IpAddress v4_from(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d);
  // Canonical text: dotted quad, or RFC 5952 IPv6 (inet_ntop) without brackets.
  [[nodiscard]] std::string to_string() const;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 sees a literal 0 in the defaulted <=>.
  friend auto operator<=>(const IpAddress&, const IpAddress&) = default;
};

// Strict parsing: IPv4 only as four decimal numbers 0-255 without leading zeros
// ("127.0.0.1", never "0x7f.1", "017.0.0.1", "2130706433"); IPv6 as inet_pton reads it,
// without brackets and without a zone id. Anything else: nullopt.
std::optional<IpAddress> parse_ip_address(std::string_view text);

// True when `text` is exactly a canonical dotted quad (see parse_ip_address).
bool is_canonical_ipv4(std::string_view text);

// A CIDR range, "127.0.0.0/8" or "fc00::/7".
struct IpRange {
  IpAddress base;
  unsigned prefix = 0;  // 0-32 for IPv4, 0-128 for IPv6
  [[nodiscard]] bool contains(const IpAddress& address) const;
  [[nodiscard]] std::string to_string() const;
};

// Parses "ADDRESS/PREFIX" (or a bare address, a full-length prefix). Host bits must be zero.
std::optional<IpRange> parse_ip_range(std::string_view text);

}  // namespace oarbank::proxy
