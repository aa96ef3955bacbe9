#include "proxy/destination_match.hpp"

#include <charconv>

#include "policy/egress.hpp"

namespace oarbank::proxy {
namespace {

bool is_decimal_digit(char c) { return c >= '0' && c <= '9'; }
// Lowercase only: the names are lowercased before they are matched.
bool is_lowercase_hex_digit(char c) { return is_decimal_digit(c) || (c >= 'a' && c <= 'f'); }

// A label a resolver or a URL parser might read as a number: decimal, octal, "0x" hex.
bool numeric_label(std::string_view label) {
  if (label.empty()) return false;
  if (label.size() >= 2 && label[0] == '0' && label[1] == 'x') {
    for (char c : label.substr(2)) {
      if (!is_lowercase_hex_digit(c)) return false;
    }
    return true;
  }
  for (char c : label) {
    if (!is_decimal_digit(c)) return false;
  }
  return true;
}

bool parse_port(std::string_view text, std::uint16_t& port) {
  if (text.empty() || text.size() > 5 || text[0] == '0') return false;
  unsigned value = 0;
  for (char c : text) {
    if (!is_decimal_digit(c)) return false;
  }
  std::from_chars(text.data(), text.data() + text.size(), value);
  if (value == 0 || value > 65535) return false;
  port = static_cast<std::uint16_t>(value);
  return true;
}

}  // namespace

std::string Target::authority() const {
  const std::string shown = (ip && ip->v6) ? "[" + host + "]" : host;
  return shown + ":" + std::to_string(port);
}

std::string Target::host_header(std::uint16_t default_port) const {
  const std::string shown = (ip && ip->v6) ? "[" + host + "]" : host;
  return port == default_port ? shown : shown + ":" + std::to_string(port);
}

std::optional<Target> parse_target_host(std::string_view text, std::uint16_t port,
                                        std::string& problem) {
  Target target;
  target.port = port;
  for (unsigned char c : text) {
    if (c >= 0x80) {
      problem = "host has non-ASCII characters (use punycode)";
      return std::nullopt;
    }
    if (c <= 0x20 || c == 0x7f || c == '%' || c == '@' || c == '\\' || c == '/') {
      problem = "host has a forbidden character";
      return std::nullopt;
    }
  }
  if (!text.empty() && text.front() == '[') {
    if (text.size() < 3 || text.back() != ']') {
      problem = "unbalanced brackets in host";
      return std::nullopt;
    }
    auto address = parse_ip_address(text.substr(1, text.size() - 2));
    if (!address || !address->v6) {
      problem = "not an IPv6 address between the brackets (zone ids are refused)";
      return std::nullopt;
    }
    target.ip = address;
    target.host = address->to_string();
    return target;
  }
  std::string name(text);
  for (char& c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  if (!name.empty() && name.back() == '.') name.pop_back();
  if (name.find_first_of("[]:") != std::string::npos) {
    problem = "an IPv6 address must be written in brackets";
    return std::nullopt;
  }
  const auto last_dot = name.rfind('.');
  const std::string_view last_label = last_dot == std::string::npos
                                          ? std::string_view(name)
                                          : std::string_view(name).substr(last_dot + 1);
  if (numeric_label(last_label)) {
    if (!is_canonical_ipv4(name)) {
      problem = "numeric host that is not a dotted-quad IPv4 address (refused, not guessed)";
      return std::nullopt;
    }
    target.ip = parse_ip_address(name);
    target.host = target.ip->to_string();
    return target;
  }
  if (!valid_dns_name(name, problem)) return std::nullopt;
  target.host = std::move(name);
  return target;
}

std::optional<Target> parse_authority(std::string_view text, std::uint16_t default_port,
                                      std::string& problem) {
  if (text.find('@') != std::string_view::npos) {
    problem = "userinfo in the authority is refused";
    return std::nullopt;
  }
  std::string_view host = text;
  std::string_view port_text;
  bool has_port = false;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) {
      problem = "unbalanced brackets in host";
      return std::nullopt;
    }
    host = text.substr(0, close + 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') {
        problem = "unexpected characters after ']'";
        return std::nullopt;
      }
      has_port = true;
      port_text = text.substr(close + 2);
    }
  } else if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    has_port = true;
  }
  std::uint16_t port = default_port;
  if (has_port) {
    if (!parse_port(port_text, port)) {
      problem = "port must be a number from 1 to 65535";
      return std::nullopt;
    }
  } else if (default_port == 0) {
    problem = "the port is required (host:port)";
    return std::nullopt;
  }
  return parse_target_host(host, port, problem);
}

bool destination_matches(const EgressDestination& entry, const Target& target) {
  if (entry.port != target.port) return false;
  if (entry.is_ip) {
    if (!target.ip) return false;
    const auto allowed = parse_ip_address(entry.host);
    return allowed && *allowed == *target.ip;
  }
  if (target.ip) return false;
  if (!entry.any_subdomain) return entry.host == target.host;
  return target.host.size() > entry.host.size() + 1 && target.host.ends_with(entry.host) &&
         target.host[target.host.size() - entry.host.size() - 1] == '.';
}

const EgressDestination* find_allowing_entry(const std::vector<EgressDestination>& allowlist,
                                             const Target& target) {
  for (const auto& entry : allowlist) {
    if (destination_matches(entry, target)) return &entry;
  }
  return nullptr;
}

}  // namespace oarbank::proxy
