// Admission (admission.cpp) driven without the server: a Session made by hand on one end of a
// socketpair (the module's connection), an io_context of the test's own run a step at a time,
// and upstreams on loopback where a connection is admitted. Refusals answer with their status
// and log the decision; an admitted CONNECT reaches its upstream and relays both ways; every
// path releases the module's slot.
#include "session_rig.hpp"

namespace oarbank::proxy {
namespace {

using test_rig::listen_loopback;
using test_rig::SessionRig;

TEST(SessionAdmission, AnOriginFormRequestIsRefused400) {
  SessionRig rig;
  rig.connect_and_send("GET /index.html HTTP/1.1\r\nHost: example.com\r\n\r\n");
  EXPECT_EQ(rig.answer().rfind("HTTP/1.1 400 ", 0), 0u) << rig.received;
  rig.hang_up();
  const auto* decision = rig.line("decision");
  ASSERT_NE(decision, nullptr);
  EXPECT_EQ((*decision)["verdict"], "refuse");
  EXPECT_EQ((*decision)["status"], 400);
  EXPECT_EQ(rig.line("closed"), nullptr);  // nothing was allowed: no closed line
}

TEST(SessionAdmission, ADestinationOffTheAllowlistIsRefused403ByEitherForm) {
  for (const std::string request :
       {"CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n",
        "GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n"}) {
    SessionRig rig;
    rig.allow("127.0.0.1", 10);  // another port
    rig.connect_and_send(request);
    EXPECT_EQ(rig.answer().rfind("HTTP/1.1 403 ", 0), 0u) << rig.received;
    rig.hang_up();
    const auto* decision = rig.line("decision");
    ASSERT_NE(decision, nullptr);
    EXPECT_EQ((*decision)["destination"], "127.0.0.1:9");
    EXPECT_EQ((*decision)["verdict"], "refuse");
  }
}

TEST(SessionAdmission, AnIncompleteHeadIsRefused504AfterItsTimeout) {
  SessionRig rig(std::chrono::milliseconds(100));
  rig.connect_and_send("CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost:");
  EXPECT_EQ(rig.answer().rfind("HTTP/1.1 504 ", 0), 0u) << rig.received;
  rig.hang_up();
}

TEST(SessionAdmission, AnUpstreamThatRefusesTheConnectionIsAnswered502) {
  std::uint16_t port = 0;
  ::close(listen_loopback(port));  // a port nothing listens on now
  SessionRig rig;
  rig.allow("127.0.0.1", port);
  rig.connect_and_send("CONNECT 127.0.0.1:" + std::to_string(port) + " HTTP/1.1\r\n\r\n");
  EXPECT_EQ(rig.answer().rfind("HTTP/1.1 502 ", 0), 0u) << rig.received;
  rig.hang_up();
  const auto* closed = rig.line("closed");
  ASSERT_NE(closed, nullptr);
  EXPECT_EQ((*closed)["outcome"], "connect failed");
}

TEST(SessionAdmission, AnAllowedConnectReachesItsUpstreamAndRelaysBothWays) {
  std::uint16_t port = 0;
  const int listener = listen_loopback(port);
  SessionRig rig;
  rig.allow("127.0.0.1", port);
  // Bytes sent right after the head (a ClientHello) belong to the tunnel.
  rig.connect_and_send("CONNECT 127.0.0.1:" + std::to_string(port) +
                       " HTTP/1.1\r\nHost: x\r\n\r\nhello");
  EXPECT_EQ(rig.answer(), "HTTP/1.1 200 Connection established\r\n\r\n");
  const int upstream = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(upstream, 0);
  std::string at_upstream;
  EXPECT_TRUE(rig.run_until([&] {
    SessionRig::read_available(upstream, at_upstream);
    return at_upstream.size() >= 5;
  }));
  EXPECT_EQ(at_upstream, "hello");
  ASSERT_EQ(::write(upstream, "world", 5), 5);
  rig.received.clear();
  EXPECT_TRUE(rig.run_until([&] {
    SessionRig::read_available(rig.app_fd, rig.received);
    return rig.received.size() >= 5;
  }));
  EXPECT_EQ(rig.received, "world");
  ::close(upstream);
  ::close(listener);
  rig.hang_up();
  const auto* decision = rig.line("decision");
  ASSERT_NE(decision, nullptr);
  EXPECT_EQ((*decision)["verdict"], "allow");
  const auto* closed = rig.line("closed");
  ASSERT_NE(closed, nullptr);
  EXPECT_EQ((*closed)["outcome"], "closed");
  EXPECT_EQ((*closed)["bytes_up"], 5);
  EXPECT_EQ((*closed)["bytes_down"], 5);
}

}  // namespace
}  // namespace oarbank::proxy
