#include "policy/egress.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <string>

namespace oarbank {
namespace {

bool is_ldh(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

std::string lower_ascii(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// The page's row promises "no loopback, no link-local": a destination that names them, or
// any address no module may reach, is refused here already (the proxy checks what names
// resolve to as well). Returns why, or nullptr.
const char* never_allowed(const EgressDestination& dest) {
  if (!dest.is_ip) {
    if (dest.host == "localhost" || dest.host.ends_with(".localhost")) {
      return "loopback is never an egress destination (localhost)";
    }
    return nullptr;
  }
  in6_addr in6{};
  std::array<unsigned char, 4> v4{};
  if (inet_pton(AF_INET6, dest.host.c_str(), &in6) == 1) {
    const unsigned char* v6 = in6.s6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&in6)) {
      std::copy(v6 + 12, v6 + 16, v4.begin());  // ::ffff:a.b.c.d is IPv4
    } else {
      const bool zero_prefix = std::all_of(v6, v6 + 15, [](unsigned char b) { return b == 0; });
      if (zero_prefix && (v6[15] == 0 || v6[15] == 1))
        return "loopback and unspecified addresses are never egress destinations";
      if (v6[0] == 0xfe && (v6[1] & 0xc0) == 0x80)
        return "link-local addresses are never egress destinations";
      if (v6[0] == 0xff) return "multicast addresses are never egress destinations";
      return nullptr;
    }
  } else if (inet_pton(AF_INET, dest.host.c_str(), v4.data()) != 1) {
    return nullptr;
  }
  if (v4[0] == 127 || v4[0] == 0)
    return "loopback and unspecified addresses are never egress destinations";
  if (v4[0] == 169 && v4[1] == 254)
    return "link-local addresses (169.254.0.0/16, cloud metadata) are never egress destinations";
  if (v4[0] >= 224)
    return "multicast, reserved and broadcast addresses are never egress destinations";
  return nullptr;
}

// A URL where a destination belongs: a scheme ("https://...") or a path ("host:443/x").
bool looks_like_url(std::string_view text) {
  return text.find("://") != std::string_view::npos || text.find('/') != std::string_view::npos;
}

// The host:port a URL names, for the message: "https://api.example.com/v1" ->
// "api.example.com:443". The default port is the scheme's (http 80, https 443); nothing when
// the scheme is another, or what is left has characters no destination has.
std::optional<std::string> destination_of_url(std::string_view text) {
  std::string_view scheme;
  if (auto end = text.find("://"); end != std::string_view::npos) {
    scheme = text.substr(0, end);
    text.remove_prefix(end + 3);
  }
  text = text.substr(0, text.find_first_of("/?#"));
  if (auto at = text.rfind('@'); at != std::string_view::npos) text.remove_prefix(at + 1);
  if (text.empty()) return std::nullopt;
  for (char c : text) {
    if (!is_ldh(c) && !(c >= 'A' && c <= 'Z') && c != '.' && c != ':' && c != '[' && c != ']' &&
        c != '*') {
      return std::nullopt;
    }
  }
  std::string out(text);
  const auto close = text.rfind(']');
  const auto colon = text.rfind(':');
  const bool has_port =
      colon != std::string_view::npos && (close == std::string_view::npos || colon > close);
  if (!has_port) {
    const std::string lower = lower_ascii(scheme);
    if (lower == "https") {
      out += ":443";
    } else if (lower == "http") {
      out += ":80";
    } else {
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace

// A DNS name in ASCII (IDNs in punycode): labels of letters, digits and hyphens, 1 to 63
// characters, not starting or ending with a hyphen, 253 characters in all.
bool valid_dns_name(std::string_view name, std::string& problem) {
  if (name.empty()) {
    problem = "empty host";
    return false;
  }
  if (name.size() > 253) {
    problem = "host longer than 253 characters";
    return false;
  }
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('.', start);
    if (end == std::string_view::npos) end = name.size();
    std::string_view label = name.substr(start, end - start);
    if (label.empty()) {
      problem = "host has an empty label";
      return false;
    }
    if (label.size() > 63) {
      problem = "host has a label longer than 63 characters";
      return false;
    }
    for (char c : label) {
      if (!is_ldh(c)) {
        problem = "host has a character other than letters, digits, '-' and '.' (use punycode)";
        return false;
      }
    }
    if (label.front() == '-' || label.back() == '-') {
      problem = "host has a label that starts or ends with '-'";
      return false;
    }
    start = end + 1;
  }
  return true;
}

std::string EgressDestination::to_string() const {
  std::string out;
  if (any_subdomain) out += "*.";
  if (is_ip && host.find(':') != std::string::npos) {
    out += "[" + host + "]";
  } else {
    out += host;
  }
  out += ":" + std::to_string(port);
  return out;
}

std::optional<EgressDestination> parse_egress_destination(std::string_view text,
                                                          std::string& problem) {
  EgressDestination dest;
  // A NUL would end the C string inet_pton reads: "192.0.2.7\0.evil:443" must not pass as an IP.
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      problem = "contains a control character";
      return std::nullopt;
    }
  }
  // Issue 16: a URL ("https://host:443", "http://example.com", "host:443/path") otherwise
  // reaches the host:port parser and is refused for the wrong reason ("port must be a number",
  // "an IPv6 address must be written in brackets").
  if (looks_like_url(text)) {
    problem = "egress entries are host:port, not URLs";
    if (auto written = destination_of_url(text)) {
      problem += " (write \"" + *written + "\")";
    }
    return std::nullopt;
  }
  std::string_view host_part;
  std::string_view port_part;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      problem = "expected [IPv6]:port";
      return std::nullopt;
    }
    host_part = text.substr(1, close - 1);
    port_part = text.substr(close + 2);
    std::array<unsigned char, 16> buf{};
    std::string host(host_part);
    if (inet_pton(AF_INET6, host.c_str(), buf.data()) != 1) {
      problem = "not an IPv6 address between the brackets";
      return std::nullopt;
    }
    char canonical[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, buf.data(), canonical, sizeof canonical);
    dest.host = canonical;
    dest.is_ip = true;
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      problem = "expected host:port";
      return std::nullopt;
    }
    host_part = text.substr(0, colon);
    port_part = text.substr(colon + 1);
    if (host_part.find(':') != std::string_view::npos) {
      problem = "an IPv6 address must be written in brackets, [2001:db8::1]:443";
      return std::nullopt;
    }
    std::string host = lower_ascii(host_part);
    if (host.starts_with("*.")) {
      dest.any_subdomain = true;
      host.erase(0, 2);
    }
    if (host.find('*') != std::string::npos) {
      problem = "a wildcard is only allowed as a leading '*.'";
      return std::nullopt;
    }
    if (!host.empty() && host.back() == '.') host.pop_back();
    if (host.empty()) {
      problem = "empty host";
      return std::nullopt;
    }
    std::array<unsigned char, 4> buf{};
    if (inet_pton(AF_INET, host.c_str(), buf.data()) == 1) {
      if (dest.any_subdomain) {
        problem = "a wildcard cannot apply to an IP address";
        return std::nullopt;
      }
      dest.is_ip = true;
    } else {
      // "256.1.1.1", "127.1", and the forms the resolver reads as IPv4 although they are not
      // dotted decimal ("0x7f.0.0.1", "017.0.0.1"): getaddrinfo would connect to an address
      // the policy does not show.
      bool has_digit = false;
      bool all_numeric = true;
      for (char c : host) {
        has_digit = has_digit || (c >= '0' && c <= '9');
        all_numeric = all_numeric && ((c >= '0' && c <= '9') || c == '.');
      }
      in_addr legacy{};
      if ((has_digit && all_numeric) || inet_aton(host.c_str(), &legacy) != 0) {
        problem = "not a valid IPv4 address (write four decimal numbers, e.g. 192.0.2.7)";
        return std::nullopt;
      }
      if (!valid_dns_name(host, problem)) return std::nullopt;
      // "*.com" would allow every name under a top-level domain: a wildcard needs a
      // registrable name (two labels at least) under it.
      if (dest.any_subdomain && host.find('.') == std::string::npos) {
        problem =
            "a wildcard must stand above a name of two labels at least (\"*.example.com\", not "
            "\"*.com\")";
        return std::nullopt;
      }
    }
    dest.host = std::move(host);
  }
  if (port_part.empty() || port_part.size() > 5) {
    problem = "port must be a number from 1 to 65535";
    return std::nullopt;
  }
  unsigned port = 0;
  auto [ptr, ec] = std::from_chars(port_part.data(), port_part.data() + port_part.size(), port);
  if (ec != std::errc() || ptr != port_part.data() + port_part.size() || port == 0 ||
      port > 65535 || port_part.front() == '+' || port_part.front() == '0') {
    problem = "port must be a number from 1 to 65535";
    return std::nullopt;
  }
  dest.port = static_cast<std::uint16_t>(port);
  if (const char* why = never_allowed(dest)) {
    problem = why;
    return std::nullopt;
  }
  return dest;
}

}  // namespace oarbank
