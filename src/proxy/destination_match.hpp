// The destination a client asks for, normalised, and whether an allowlist entry covers it.
//
// Names: ASCII only (IDNs in punycode), lower-cased, one trailing dot stripped, letters,
// digits and hyphens in labels of 1-63 characters. IP literals: only the canonical dotted
// quad for IPv4 and a bracketed IPv6 address without a zone id. Whatever else a resolver
// might read as a number ("2130706433", "0x7f.1", "017.0.0.1", "1.2.3") is refused, never
// guessed: the proxy must judge the address that will actually be connected to.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oarbank/policy.hpp"
#include "proxy/ip_address.hpp"

namespace oarbank::proxy {

struct Target {
  std::string host;  // lower-case name without trailing dot, or canonical IP text (no brackets)
  std::uint16_t port = 0;
  std::optional<IpAddress> ip;  // set for an IP literal
  // "host:port", IPv6 in brackets: how logs and Host headers show it.
  [[nodiscard]] std::string authority() const;
  // The Host header value for a forwarded request: the port only when not `default_port`.
  [[nodiscard]] std::string host_header(std::uint16_t default_port) const;
  friend bool operator==(const Target&, const Target&) = default;
};

// Parses a host as written in an authority: a name, a dotted quad, or "[IPv6]".
std::optional<Target> parse_target_host(std::string_view text, std::uint16_t port,
                                        std::string& problem);

// Parses an authority "host[:port]". `default_port` 0: the port is required (CONNECT).
// Userinfo ("user@host"), an empty port, and a port outside 1-65535 are refused.
std::optional<Target> parse_authority(std::string_view text, std::uint16_t default_port,
                                      std::string& problem);

// True when `entry` covers `target`: same port, and the same name ("*.example.com": any name
// ending in ".example.com", not the apex), or the same IP address. A name never matches an IP
// entry and an IP literal never matches a name entry.
bool destination_matches(const EgressDestination& entry, const Target& target);

// The first entry of `allowlist` that covers `target`, or nullptr.
const EgressDestination* find_allowing_entry(const std::vector<EgressDestination>& allowlist,
                                             const Target& target);

}  // namespace oarbank::proxy
