// Which addresses are always refused, private, or public; the IPv6 forms that embed IPv4.
#include "proxy/address_class.hpp"

#include <gtest/gtest.h>

#include <string>

namespace oarbank::proxy {
namespace {

IpAddress ip(const std::string& text) {
  auto parsed = parse_ip_address(text);
  EXPECT_TRUE(parsed.has_value()) << text;
  return parsed.value_or(IpAddress{});
}

AddressClass cls(const std::string& text, const std::set<IpAddress>& node = {}) {
  return classify_address(ip(text), node).cls;
}

TEST(AddressClass, ForbiddenIpv4) {
  for (const char* text :
       {"0.0.0.0", "0.1.2.3", "127.0.0.1", "127.255.255.254", "169.254.169.254", "169.254.0.1",
        "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255"}) {
    EXPECT_EQ(cls(text), AddressClass::Forbidden) << text;
  }
}

TEST(AddressClass, PrivateIpv4) {
  for (const char* text : {"10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.255",
                           "192.168.1.1", "100.64.0.1", "100.127.255.255",
                           // Session 15's attack review: special-purpose, not globally reachable.
                           "198.18.0.5", "198.19.255.1", "192.0.0.170", "192.88.99.1"}) {
    EXPECT_EQ(cls(text), AddressClass::Private) << text;
  }
}

TEST(AddressClass, PublicIpv4AndRangeEdges) {
  for (const char* text : {"1.1.1.1", "8.8.8.8", "93.184.216.34", "172.15.255.255", "172.32.0.0",
                           "100.63.255.255", "100.128.0.0", "169.253.255.255", "169.255.0.0",
                           "198.17.255.255", "198.20.0.0", "192.0.1.255", "192.88.98.255",
                           "126.255.255.255", "128.0.0.0", "223.255.255.255", "192.0.2.7"}) {
    EXPECT_EQ(cls(text), AddressClass::Public) << text;
  }
}

TEST(AddressClass, ForbiddenIpv6) {
  for (const char* text : {"::", "::1", "fe80::1", "febf::1", "fec0::1", "ff02::1", "ff05::2",
                           "::7f00:1", "::a00:1", "100::1", "2001:10::1"}) {
    EXPECT_EQ(cls(text), AddressClass::Forbidden) << text;
  }
}

TEST(AddressClass, PrivateIpv6) {
  for (const char* text : {"fc00::1", "fd12:3456::1", "64:ff9b:1::808:808", "2001:2::1", "5f00::1",
                           // The IPv4 they carry is judged: NAT64 and 6to4 of 198.18.0.1.
                           "64:ff9b::c612:1", "2002:c612:1::1"}) {
    EXPECT_EQ(cls(text), AddressClass::Private) << text;
  }
}

TEST(AddressClass, PublicIpv6) {
  for (const char* text : {"2606:4700::1111", "2001:4860:4860::8888", "2a00:1450::1"}) {
    EXPECT_EQ(cls(text), AddressClass::Public) << text;
  }
}

TEST(AddressClass, EmbeddedIpv4IsJudged) {
  // v4-mapped
  EXPECT_EQ(cls("::ffff:127.0.0.1"), AddressClass::Forbidden);
  EXPECT_EQ(cls("::ffff:169.254.169.254"), AddressClass::Forbidden);
  EXPECT_EQ(cls("::ffff:10.0.0.1"), AddressClass::Private);
  EXPECT_EQ(cls("::ffff:8.8.8.8"), AddressClass::Public);
  // v4-compatible (deprecated): refused whatever it carries
  EXPECT_EQ(cls("::8.8.8.8"), AddressClass::Forbidden);
  // SIIT v4-translated
  EXPECT_EQ(cls("::ffff:0:127.0.0.1"), AddressClass::Forbidden);
  // NAT64 well-known prefix
  EXPECT_EQ(cls("64:ff9b::127.0.0.1"), AddressClass::Forbidden);
  EXPECT_EQ(cls("64:ff9b::a9fe:a9fe"), AddressClass::Forbidden);  // 169.254.169.254
  EXPECT_EQ(cls("64:ff9b::192.168.0.1"), AddressClass::Private);
  EXPECT_EQ(cls("64:ff9b::8.8.8.8"), AddressClass::Public);
  // local-use NAT64: private at least, forbidden when it carries a forbidden address
  EXPECT_EQ(cls("64:ff9b:1::127.0.0.1"), AddressClass::Forbidden);
  // 6to4
  EXPECT_EQ(cls("2002:7f00:1::1"), AddressClass::Forbidden);
  EXPECT_EQ(cls("2002:a9fe:a9fe::1"), AddressClass::Forbidden);
  EXPECT_EQ(cls("2002:c0a8:101::1"), AddressClass::Private);
  EXPECT_EQ(cls("2002:808:808::1"), AddressClass::Public);
  // Teredo: server in bits 32-63, client obfuscated (xor 0xff) in the last 32 bits
  EXPECT_EQ(cls("2001:0:7f00:1::1"), AddressClass::Forbidden);
  EXPECT_EQ(cls("2001:0:808:808::80ff:fffe"), AddressClass::Forbidden);  // client 127.0.0.1
  EXPECT_EQ(cls("2001:0:808:808::f7f7:f7f7"), AddressClass::Public);     // client 8.8.8.8
  // ISATAP interface identifier
  EXPECT_EQ(cls("2606:4700::5efe:127.0.0.1"), AddressClass::Forbidden);
  EXPECT_EQ(cls("2606:4700::200:5efe:169.254.169.254"), AddressClass::Forbidden);
}

TEST(AddressClass, NodeAddressesAreForbiddenInEveryForm) {
  const std::set<IpAddress> node = {ip("203.0.113.5"), ip("2001:db8::5")};
  EXPECT_EQ(cls("203.0.113.5", node), AddressClass::Forbidden);
  EXPECT_EQ(cls("2001:db8::5", node), AddressClass::Forbidden);
  EXPECT_EQ(cls("::ffff:203.0.113.5", node), AddressClass::Forbidden);
  EXPECT_EQ(cls("64:ff9b::203.0.113.5", node), AddressClass::Forbidden);
  EXPECT_EQ(cls("2002:cb00:7105::1", node), AddressClass::Forbidden);
  EXPECT_EQ(cls("203.0.113.6", node), AddressClass::Public);
}

TEST(AddressClass, PermittedDependsOnPrivateSettingAndTestingExemptions) {
  AddressContext context;
  std::string reason;
  EXPECT_FALSE(address_permitted(ip("10.1.2.3"), context, reason));
  EXPECT_NE(reason.find("private"), std::string::npos) << reason;
  context.allow_private_ranges = true;
  EXPECT_TRUE(address_permitted(ip("10.1.2.3"), context, reason));
  EXPECT_TRUE(address_permitted(ip("fd00::1"), context, reason));
  // Allowing private ranges never opens the forbidden ones.
  EXPECT_FALSE(address_permitted(ip("127.0.0.1"), context, reason));
  EXPECT_FALSE(address_permitted(ip("169.254.169.254"), context, reason));
  EXPECT_NE(reason.find("link-local"), std::string::npos) << reason;
  EXPECT_FALSE(address_permitted(ip("::ffff:10.0.0.1"), AddressContext{}, reason));
  context.testing_exemptions = {*parse_ip_range("127.0.0.0/8")};
  EXPECT_TRUE(address_permitted(ip("127.0.0.1"), context, reason));
  EXPECT_FALSE(address_permitted(ip("::1"), context, reason));
}

TEST(IpAddress, StrictParsing) {
  EXPECT_TRUE(parse_ip_address("192.0.2.7").has_value());
  EXPECT_TRUE(parse_ip_address("2001:db8::1").has_value());
  for (const char* text :
       {"2130706433", "0x7f.0.0.1", "0x7f000001", "017.0.0.1", "127.1", "127.0.1", "1.2.3.4.5",
        "256.0.0.1", "1.2.3.", "", "01.2.3.4", "fe80::1%eth0", "[::1]", " 1.2.3.4", "1.2.3.4 "}) {
    EXPECT_FALSE(parse_ip_address(text).has_value()) << text;
  }
  EXPECT_EQ(ip("2001:DB8:0:0::1").to_string(), "2001:db8::1");
}

TEST(IpRange, ParseAndContain) {
  auto r = parse_ip_range("172.16.0.0/12");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->contains(ip("172.31.1.1")));
  EXPECT_FALSE(r->contains(ip("172.32.0.0")));
  EXPECT_FALSE(r->contains(ip("::ffff:172.16.0.1")));  // another family
  EXPECT_FALSE(parse_ip_range("10.0.0.1/8"));          // host bits set
  EXPECT_FALSE(parse_ip_range("10.0.0.0/33"));
  EXPECT_FALSE(parse_ip_range("10.0.0.0/08"));
  EXPECT_TRUE(parse_ip_range("fc00::/7"));
  EXPECT_EQ(parse_ip_range("127.0.0.1")->prefix, 32u);
}

}  // namespace
}  // namespace oarbank::proxy
