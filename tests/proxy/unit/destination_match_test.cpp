// Target parsing (what the client asks for) and allowlist matching.
#include "proxy/destination_match.hpp"

#include <gtest/gtest.h>

#include "policy/egress.hpp"

namespace oarbank::proxy {
namespace {

EgressDestination entry(const std::string& text) {
  std::string problem;
  auto parsed = parse_egress_destination(text, problem);
  EXPECT_TRUE(parsed.has_value()) << text << ": " << problem;
  return parsed.value_or(EgressDestination{});
}

std::optional<Target> target(const std::string& authority, std::uint16_t default_port = 0) {
  std::string problem;
  return parse_authority(authority, default_port, problem);
}

bool allows(const std::string& rule, const std::string& authority) {
  auto t = target(authority);
  EXPECT_TRUE(t.has_value()) << authority;
  return t && destination_matches(entry(rule), *t);
}

TEST(DestinationMatch, CaseAndTrailingDot) {
  EXPECT_TRUE(allows("api.example.com:443", "API.Example.COM:443"));
  EXPECT_TRUE(allows("api.example.com:443", "api.example.com.:443"));
  EXPECT_FALSE(target("api.example.com..:443"));  // only one trailing dot is stripped
  EXPECT_EQ(target("API.example.com.:443")->host, "api.example.com");
}

TEST(DestinationMatch, WildcardOnDotBoundaryOnly) {
  EXPECT_TRUE(allows("*.example.com:443", "a.example.com:443"));
  EXPECT_TRUE(allows("*.example.com:443", "a.b.example.com:443"));
  EXPECT_FALSE(allows("*.example.com:443", "example.com:443"));
  EXPECT_FALSE(allows("*.example.com:443", "badexample.com:443"));
  EXPECT_FALSE(allows("*.example.com:443", "example.com.evil.net:443"));
  EXPECT_FALSE(allows("*.example.com:443", "a.example.com:444"));
  EXPECT_FALSE(allows("example.com:443", "a.example.com:443"));
}

TEST(DestinationMatch, PortsPerEntry) {
  EXPECT_TRUE(allows("example.com:80", "example.com:80"));
  EXPECT_FALSE(allows("example.com:80", "example.com:443"));
  const std::vector<EgressDestination> list = {entry("example.com:80"), entry("example.com:443")};
  EXPECT_EQ(find_allowing_entry(list, *target("example.com:443")), &list[1]);
  EXPECT_EQ(find_allowing_entry(list, *target("example.com:8080")), nullptr);
}

TEST(DestinationMatch, IpLiteralsMatchOnlyIpEntries) {
  EXPECT_TRUE(allows("192.0.2.7:80", "192.0.2.7:80"));
  EXPECT_FALSE(allows("192.0.2.7:80", "192.0.2.8:80"));
  EXPECT_TRUE(allows("[2001:db8::1]:443", "[2001:DB8:0::1]:443"));
  EXPECT_FALSE(allows("[2001:db8::1]:443", "[::ffff:192.0.2.7]:443"));
  EXPECT_FALSE(allows("[2001:db8::1]:443", "192.0.2.7:443"));
  // A name entry never matches an IP literal, even one the name resolves to; and the reverse.
  Target literal = *target("192.0.2.7:80");
  EgressDestination name_entry{"192.0.2.7", 80, false, false};  // a hand-made, inconsistent entry
  EXPECT_FALSE(destination_matches(name_entry, literal));
  Target name = *target("example.com:80");
  EgressDestination ip_entry{"example.com", 80, false, true};
  EXPECT_FALSE(destination_matches(ip_entry, name));
}

TEST(DestinationMatch, NumericFormsAreRefusedNotGuessed) {
  for (const char* text :
       {"2130706433:80", "0x7f.1:80", "0x7f000001:80", "017.0.0.1:80", "127.1:80", "1.2.3:80",
        "0177.0.0.1:80", "example.0x10:80", "example.123:80", "256.1.1.1:80", "01.2.3.4:80"}) {
    EXPECT_FALSE(target(text).has_value()) << text;
  }
  EXPECT_TRUE(target("1.2.3.4.:80").has_value());  // a trailing dot, then canonical
  EXPECT_TRUE(target("123.example.com:80").has_value());
}

TEST(DestinationMatch, HostileAuthorities) {
  for (const char* text : {"user@example.com:443",
                           "a@b:443",
                           "example.com@evil.com:443",
                           "[::1%25lo]:443",
                           "[fe80::1%eth0]:443",
                           "[::1:443",
                           "::1:443",
                           "[1.2.3.4]:443",
                           "[v1.x]:443",
                           "example.com:",
                           "example.com:0",
                           "example.com:65536",
                           "example.com:+443",
                           "example.com:0443",
                           "example.com:443:443",
                           "exa mple.com:443",
                           "exämple.com:443",
                           "example.com/x:443",
                           "ex\\ample.com:443",
                           "-example.com:443",
                           "example_x.com:443",
                           ":443",
                           "[]:443",
                           "example.com"}) {
    EXPECT_FALSE(target(text).has_value()) << text;
  }
  auto v6 = target("[2001:db8::1]:443");
  ASSERT_TRUE(v6);
  EXPECT_TRUE(v6->ip && v6->ip->v6);
  EXPECT_EQ(v6->authority(), "[2001:db8::1]:443");
  EXPECT_EQ(target("example.com", 80)->port, 80);
  EXPECT_EQ(target("example.com:8080", 80)->host_header(80), "example.com:8080");
  EXPECT_EQ(target("example.com", 80)->host_header(80), "example.com");
}

}  // namespace
}  // namespace oarbank::proxy
