// HTTP/1 forwarding (http_forward.cpp) driven without the server: a Session made by hand
// (session_rig.hpp), a plain-HTTP request to an upstream on loopback. The upstream sees the
// canonical origin-form head; the client sees the response head as rewritten and the body as
// long as its framing says; a response cut short resets the client rather than passing for a
// whole one.
#include "session_rig.hpp"

namespace oarbank::proxy {
namespace {

using test_rig::listen_loopback;
using test_rig::SessionRig;

// Reads what the upstream received until the end of a head.
std::string upstream_head(SessionRig& rig, int upstream) {
  std::string head;
  rig.run_until([&] {
    SessionRig::read_available(upstream, head);
    return head.find("\r\n\r\n") != std::string::npos;
  });
  return head;
}

TEST(SessionForwarding, ARequestGoesOutCanonicalAndItsResponseComesBackFramed) {
  std::uint16_t port = 0;
  const int listener = listen_loopback(port);
  ASSERT_EQ(::fcntl(listener, F_SETFL, O_NONBLOCK), 0);  // accepted while the loop runs
  SessionRig rig;
  rig.allow("127.0.0.1", port);
  const std::string authority = "127.0.0.1:" + std::to_string(port);
  rig.connect_and_send("GET http://" + authority +
                       "/a?b HTTP/1.1\r\nHost: proxy.invalid\r\ncontent-length: 000\r\n\r\n");
  int upstream = -1;
  ASSERT_TRUE(rig.run_until([&] {
    upstream = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    return upstream >= 0;
  }));
  const std::string head = upstream_head(rig, upstream);
  EXPECT_EQ(head.rfind("GET /a?b HTTP/1.1\r\n", 0), 0u) << head;
  EXPECT_NE(head.find("Host: " + authority + "\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("proxy.invalid"), std::string::npos)
      << head;  // the client's Host is replaced
  EXPECT_NE(head.find("Content-Length: 0\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("Connection: close\r\n"), std::string::npos) << head;
  // More than the framing says: the extra bytes must not reach the client.
  const std::string response = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA";
  ASSERT_EQ(::write(upstream, response.data(), response.size()),
            static_cast<ssize_t>(response.size()));
  EXPECT_TRUE(rig.run_until([&] {
    SessionRig::read_available(rig.app_fd, rig.received);
    return rig.received.size() >= 4 && rig.received.substr(rig.received.size() - 4) == "\r\nok";
  })) << rig.received;
  EXPECT_EQ(rig.received.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << rig.received;
  EXPECT_NE(rig.received.find("\r\n\r\nok"), std::string::npos) << rig.received;
  EXPECT_EQ(rig.received.find("EXTRA"), std::string::npos) << rig.received;
  ::close(upstream);
  ::close(listener);
  rig.hang_up();
  const auto* closed = rig.line("closed");
  ASSERT_NE(closed, nullptr);
  EXPECT_EQ((*closed)["outcome"], "closed");
  EXPECT_EQ((*closed)["upstream_status"], 200);
}

TEST(SessionForwarding, AResponseCutShortResetsTheClient) {
  std::uint16_t port = 0;
  const int listener = listen_loopback(port);
  ASSERT_EQ(::fcntl(listener, F_SETFL, O_NONBLOCK), 0);  // accepted while the loop runs
  SessionRig rig;
  rig.allow("127.0.0.1", port);
  rig.connect_and_send("GET http://127.0.0.1:" + std::to_string(port) + "/ HTTP/1.1\r\n\r\n");
  int upstream = -1;
  ASSERT_TRUE(rig.run_until([&] {
    upstream = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    return upstream >= 0;
  }));
  upstream_head(rig, upstream);
  const std::string response = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
  ASSERT_EQ(::write(upstream, response.data(), response.size()),
            static_cast<ssize_t>(response.size()));
  ::close(upstream);
  ::close(listener);
  EXPECT_TRUE(rig.run_until([&] { return rig.module->active == 0; }));
  const auto* closed = rig.line("closed");
  ASSERT_NE(closed, nullptr);
  EXPECT_EQ((*closed)["outcome"], "reset");
  EXPECT_EQ((*closed)["reason"], "the upstream closed inside the response body");
  rig.hang_up();
}

}  // namespace
}  // namespace oarbank::proxy
