#include "proxy/ip_address.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>

namespace oarbank::proxy {

IpAddress IpAddress::v4_from(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  IpAddress out;
  out.bytes[0] = a;
  out.bytes[1] = b;
  out.bytes[2] = c;
  out.bytes[3] = d;
  return out;
}

std::string IpAddress::to_string() const {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), text, sizeof text);
  return text;
}

bool is_canonical_ipv4(std::string_view text) {
  int parts = 0;
  std::size_t pos = 0;
  while (true) {
    std::size_t end = pos;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    const std::size_t len = end - pos;
    if (len == 0 || len > 3) return false;
    if (len > 1 && text[pos] == '0') return false;  // "017" is octal to inet_aton: refuse
    unsigned value = 0;
    std::from_chars(text.data() + pos, text.data() + end, value);
    if (value > 255) return false;
    ++parts;
    if (end == text.size()) break;
    if (text[end] != '.' || parts == 4) return false;
    pos = end + 1;
  }
  return parts == 4;
}

std::optional<IpAddress> parse_ip_address(std::string_view text) {
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  std::string copy(text);  // inet_pton wants a C string; a NUL inside is refused below
  if (copy.find('\0') != std::string::npos) return std::nullopt;
  IpAddress out;
  if (is_canonical_ipv4(text)) {
    if (inet_pton(AF_INET, copy.c_str(), out.bytes.data()) != 1) return std::nullopt;
    return out;
  }
  if (copy.find(':') == std::string::npos || copy.find('%') != std::string::npos) {
    return std::nullopt;
  }
  if (inet_pton(AF_INET6, copy.c_str(), out.bytes.data()) != 1) return std::nullopt;
  out.v6 = true;
  return out;
}

bool IpRange::contains(const IpAddress& address) const {
  if (address.v6 != base.v6) return false;
  const unsigned full = prefix / 8;
  for (unsigned i = 0; i < full; ++i) {
    if (address.bytes[i] != base.bytes[i]) return false;
  }
  const unsigned rest = prefix % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (address.bytes[full] & mask) == (base.bytes[full] & mask);
}

std::string IpRange::to_string() const { return base.to_string() + "/" + std::to_string(prefix); }

std::optional<IpRange> parse_ip_range(std::string_view text) {
  const auto slash = text.find('/');
  auto base = parse_ip_address(text.substr(0, slash));
  if (!base) return std::nullopt;
  const unsigned max = base->v6 ? 128 : 32;
  unsigned prefix = max;
  if (slash != std::string_view::npos) {
    auto digits = text.substr(slash + 1);
    if (digits.empty() || digits.size() > 3 || (digits.size() > 1 && digits[0] == '0')) {
      return std::nullopt;
    }
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
    if (ec != std::errc() || ptr != digits.data() + digits.size() || prefix > max) {
      return std::nullopt;
    }
  }
  IpRange range{*base, prefix};
  // Host bits set ("10.0.0.1/8") is a typo or a misunderstanding: refuse it.
  IpAddress masked = *base;
  for (unsigned bit = prefix; bit < max; ++bit) {
    masked.bytes[bit / 8] =
        static_cast<std::uint8_t>(masked.bytes[bit / 8] & ~(0x80u >> (bit % 8)));
  }
  if (masked != *base) return std::nullopt;
  return range;
}

}  // namespace oarbank::proxy
