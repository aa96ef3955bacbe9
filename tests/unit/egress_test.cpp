// One `egress` entry: parsing, normalisation, the canonical text, and refusals.
#include "policy/egress.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace oarbank {
namespace {

EgressDestination parse_ok(const std::string& text) {
  std::string problem;
  auto dest = parse_egress_destination(text, problem);
  EXPECT_TRUE(dest.has_value()) << text << ": " << problem;
  return dest.value_or(EgressDestination{});
}

std::string parse_problem(const std::string& text) {
  std::string problem;
  auto dest = parse_egress_destination(text, problem);
  EXPECT_FALSE(dest.has_value()) << text << " accepted as " << (dest ? dest->to_string() : "");
  return problem;
}

TEST(Egress, HostNameIsLowerCased) {
  const auto d = parse_ok("API.Example.COM:443");
  EXPECT_EQ(d.host, "api.example.com");
  EXPECT_EQ(d.port, 443);
  EXPECT_FALSE(d.any_subdomain);
  EXPECT_FALSE(d.is_ip);
  EXPECT_EQ(d.to_string(), "api.example.com:443");
}

TEST(Egress, TrailingDotIsStripped) {
  const auto d = parse_ok("example.com.:80");
  EXPECT_EQ(d.host, "example.com");
  EXPECT_EQ(d.to_string(), "example.com:80");
  EXPECT_EQ(parse_ok("Example.COM.:80"), d);
}

TEST(Egress, WildcardPrefix) {
  const auto d = parse_ok("*.GitHubUserContent.com:443");
  EXPECT_TRUE(d.any_subdomain);
  EXPECT_EQ(d.host, "githubusercontent.com");
  EXPECT_FALSE(d.is_ip);
  EXPECT_EQ(d.to_string(), "*.githubusercontent.com:443");
  const auto dotted = parse_ok("*.example.com.:8443");
  EXPECT_TRUE(dotted.any_subdomain);
  EXPECT_EQ(dotted.host, "example.com");
  EXPECT_EQ(dotted.to_string(), "*.example.com:8443");
  // The apex is a different destination.
  EXPECT_NE(parse_ok("example.com:443"), parse_ok("*.example.com:443"));
}

TEST(Egress, Ipv4Literal) {
  const auto d = parse_ok("192.0.2.7:80");
  EXPECT_TRUE(d.is_ip);
  EXPECT_FALSE(d.any_subdomain);
  EXPECT_EQ(d.host, "192.0.2.7");
  EXPECT_EQ(d.to_string(), "192.0.2.7:80");
  EXPECT_EQ(parse_ok("192.0.2.7.:80").host, "192.0.2.7");
}

TEST(Egress, Ipv6CanonicalForm) {
  const auto d = parse_ok("[2001:DB8:0:0:0:0:0:1]:443");
  EXPECT_TRUE(d.is_ip);
  EXPECT_EQ(d.host, "2001:db8::1");
  EXPECT_EQ(d.port, 443);
  EXPECT_EQ(d.to_string(), "[2001:db8::1]:443");
  EXPECT_EQ(parse_ok("[2001:0db8::0001]:443"), d);
  EXPECT_EQ(parse_ok("[2001:db8::]:8080").to_string(), "[2001:db8::]:8080");
  EXPECT_EQ(parse_ok("[2001:db8:0:0:0:0:0:0]:1").host, "2001:db8::");
  EXPECT_EQ(parse_ok("[::FFFF:192.0.2.7]:443").host, "::ffff:192.0.2.7");
  EXPECT_EQ(parse_ok("[fd00:0:0:0:0:0:0:0]:443").to_string(), "[fd00::]:443");
}

TEST(Egress, PortBounds) {
  EXPECT_EQ(parse_ok("a.example:1").port, 1);
  EXPECT_EQ(parse_ok("a.example:65535").port, 65535);
}

TEST(Egress, HostNameShapes) {
  EXPECT_EQ(parse_ok("intranet:8080").host, "intranet");
  EXPECT_EQ(parse_ok("xn--bcher-kva.example:443").host, "xn--bcher-kva.example");
  EXPECT_EQ(parse_ok("a-b.c-d.e:443").host, "a-b.c-d.e");
  EXPECT_EQ(parse_ok("1a.example:443").host, "1a.example");
  // A label of exactly 63 and a name of exactly 253 characters.
  const std::string label63(63, 'x');
  EXPECT_EQ(parse_ok(label63 + ".example:443").host, label63 + ".example");
  const std::string name253 = std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                              std::string(63, 'c') + "." + std::string(61, 'd');
  ASSERT_EQ(name253.size(), 253U);
  EXPECT_EQ(parse_ok(name253 + ":443").host, name253);
  EXPECT_EQ(parse_ok(name253 + ".:443").host, name253);  // 254 with the root dot
}

TEST(Egress, RoundTripThroughToString) {
  for (const char* text :
       {"api.example.com:443", "*.example.com:443", "192.0.2.7:80", "[2001:db8::1]:443",
        "[::ffff:192.0.2.7]:1", "intranet:65535", "*.a.b.c.d:8080"}) {
    SCOPED_TRACE(text);
    const auto d = parse_ok(text);
    EXPECT_EQ(d.to_string(), text);
    EXPECT_EQ(parse_ok(d.to_string()), d);
  }
}

TEST(Egress, Refusals) {
  struct Case {
    std::string text;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {"", "expected host:port"},
      {"example.com", "expected host:port"},
      {"example.com:", "port must be a number from 1 to 65535"},
      {"example.com:0", "port must be"},
      {"example.com:65536", "port must be"},
      {"example.com:100000", "port must be"},
      {"example.com:443a", "port must be"},
      {"example.com:0x1bb", "port must be"},
      {"example.com:+443", "port must be"},
      {"example.com:-443", "port must be"},
      // Issue 16: a URL is named as one, with the destination it meant when it is clear.
      {"https://host:443", "egress entries are host:port, not URLs (write \"host:443\")"},
      {"http://example.com", "egress entries are host:port, not URLs (write \"example.com:80\")"},
      {"https://api.example.com/v1/x?y=1",
       "egress entries are host:port, not URLs (write \"api.example.com:443\")"},
      {"https://user@[2001:db8::1]:8443/",
       "egress entries are host:port, not URLs (write \"[2001:db8::1]:8443\")"},
      {"ftp://example.com", "egress entries are host:port, not URLs"},
      {"example.com:443/path",
       "egress entries are host:port, not URLs (write \"example.com:443\")"},
      {"2001:db8::1:443", "must be written in brackets"},
      {"::1:443", "must be written in brackets"},
      {"[2001:db8::1]", "expected [IPv6]:port"},
      {"[2001:db8::1]:", "port must be"},
      {"[2001:db8::g]:443", "not an IPv6 address"},
      {"[192.0.2.7]:443", "not an IPv6 address"},
      {"api.*.example.com:443", "wildcard is only allowed as a leading '*.'"},
      {"*example.com:443", "wildcard"},
      {"*:443", "wildcard"},
      {"**.example.com:443", "wildcard"},
      {"*.*.example.com:443", "wildcard"},
      {"*.192.0.2.7:443", "wildcard cannot apply to an IP address"},
      {"*.:443", "empty host"},
      {":443", "empty host"},
      {".:443", "empty host"},
      {std::string(64, 'a') + ".example:443", "label longer than 63 characters"},
      {std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." +
           std::string(62, 'd') + ":443",
       "longer than 253"},
      {"b\xc3\xbc"
       "cher.example:443",
       "punycode"},
      {"exa mple.com:443", "punycode"},
      {"a..b:443", "empty label"},
      {"example.com..:443", "empty label"},
      {"-a.example:443", "starts or ends with '-'"},
      {"a-.example:443", "starts or ends with '-'"},
      {"256.0.0.1:443", "not a valid IPv4 address"},
      {"1.2.3:443", "not a valid IPv4 address"},
      {"1.2.3.4.5:443", "not a valid IPv4 address"},
      {"2130706433:443", "not a valid IPv4 address"},
      {"0x7f.0.0.1:443", "not a valid IPv4 address"},
      {"0x7f000001:443", "not a valid IPv4 address"},
      {"010.0.0.1:443", "not a valid IPv4 address"},
      {std::string("192.0.2.7\0.evil.example:443", 27), "control character"},
      {std::string("[::1\0zz]:443", 12), "control character"},
      {"example.com\t:443", "control character"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    const std::string problem = parse_problem(c.text);
    EXPECT_NE(problem.find(c.problem), std::string::npos) << problem;
  }
}

}  // namespace
}  // namespace oarbank

namespace oarbank {
namespace {

TEST(EgressStrictness, WildcardOnATopLevelDomainIsRefused) {
  std::string problem;
  EXPECT_FALSE(parse_egress_destination("*.com:443", problem).has_value());
  EXPECT_NE(problem.find("two labels"), std::string::npos) << problem;
  EXPECT_TRUE(parse_egress_destination("*.example.com:443", problem).has_value());
}

TEST(EgressStrictness, PortWithLeadingZeroIsRefused) {
  std::string problem;
  EXPECT_FALSE(parse_egress_destination("a.com:00443", problem).has_value());
  EXPECT_FALSE(parse_egress_destination("a.com:0443", problem).has_value());
  EXPECT_TRUE(parse_egress_destination("a.com:443", problem).has_value());
}

}  // namespace
}  // namespace oarbank

namespace oarbank {
namespace {

TEST(EgressStrictness, LoopbackLinkLocalAndMulticastAreNeverDestinations) {
  for (const char* entry :
       {"127.0.0.1:22", "127.1.2.3:80", "0.0.0.0:80", "169.254.169.254:80", "224.0.0.1:80",
        "255.255.255.255:80", "[::1]:22", "[::]:80", "[fe80::1]:80", "[ff02::1]:80",
        "[::ffff:127.0.0.1]:80", "[::ffff:169.254.169.254]:80", "localhost:6379", "LOCALHOST.:6379",
        "db.localhost:5432"}) {
    std::string problem;
    EXPECT_FALSE(parse_egress_destination(entry, problem).has_value()) << entry;
    EXPECT_NE(problem.find("never"), std::string::npos) << entry << ": " << problem;
  }
  std::string problem;
  EXPECT_TRUE(parse_egress_destination("192.0.2.7:443", problem).has_value()) << problem;
  EXPECT_TRUE(parse_egress_destination("[2001:db8::1]:443", problem).has_value()) << problem;
  EXPECT_TRUE(parse_egress_destination("localhost.example.com:443", problem).has_value())
      << problem;
}

}  // namespace
}  // namespace oarbank
