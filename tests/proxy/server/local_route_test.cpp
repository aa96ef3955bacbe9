// Session 15's attack review: the proxy asks the kernel, just before connecting, where each
// checked address would go (RTM_GETROUTE). What the node delivers to itself is refused: its
// loopback and interface addresses, a local route that is on no interface (AnyIP), broadcast;
// a route that leaves the node, or none at all, is not this check's to refuse.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "proxy/local_addresses.hpp"

namespace oarbank::proxy {
namespace {

TEST(RoutedToThisNode, LoopbackAndTheNodesOwnAddressesAreRefusedNamingTheRoute) {
  for (const char* text : {"127.0.0.1", "127.3.4.5", "::1", "::ffff:127.0.0.1"}) {
    const auto why = routed_to_this_node(*parse_ip_address(text));
    ASSERT_TRUE(why.has_value()) << text;
    EXPECT_NE(why->find("is refused: the node would deliver it to itself (a local route"),
              std::string::npos)
        << *why;
  }
  const auto addresses = node_addresses();
  ASSERT_TRUE(addresses.has_value());
  for (const auto& address : *addresses) {
    if (address.v6 && address.bytes[0] == 0xfe) continue;  // link-local: needs a scope
    EXPECT_TRUE(routed_to_this_node(address).has_value()) << address.to_string();
  }
}

// In a network namespace of its own (root): a local route on no interface, as AnyIP setups
// make, is the node's; an address with no route at all is left to connect's own failure.
TEST(RoutedToThisNode, ALocalRouteOnNoInterfaceIsTheNodesToo) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace";
  if (std::system("command -v ip >/dev/null 2>&1") != 0) GTEST_SKIP() << "no ip (iproute2)";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::unshare(CLONE_NEWNET) != 0) ::_exit(10);
    if (std::system("ip link set lo up && ip route add local 203.0.113.0/24 dev lo") != 0) {
      ::_exit(11);
    }
    const auto anyip = routed_to_this_node(*parse_ip_address("203.0.113.7"));
    if (!anyip || anyip->find("a local route") == std::string::npos) ::_exit(12);
    if (routed_to_this_node(*parse_ip_address("198.51.100.9")).has_value()) ::_exit(13);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: unshare, 11: ip, 12: the local route, 13: no route";
}

}  // namespace
}  // namespace oarbank::proxy
