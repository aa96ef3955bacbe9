// Admission (admission.cpp) driven without the server: a Session made by hand on one end of a
// socketpair (the module's connection), an io_context of the test's own run a step at a time,
// and upstreams on loopback where a connection is admitted. Refusals answer with their status
// and log the decision; an admitted CONNECT reaches its upstream and relays both ways; every
// path releases the module's slot.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "proxy/ip_address.hpp"
#include "proxy/server_state.hpp"
#include "proxy/session.hpp"

namespace oarbank::proxy {
namespace {

using namespace std::chrono_literals;

// A listening socket on 127.0.0.1, port chosen by the kernel.
int listen_loopback(std::uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  EXPECT_EQ(::listen(fd, 4), 0);
  socklen_t size = sizeof address;
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size), 0);
  port = ntohs(address.sin_port);
  return fd;
}

struct SessionRig {
  explicit SessionRig(std::chrono::milliseconds head_timeout = 2000ms) {
    ProxySettings settings;
    settings.header_read_timeout = head_timeout;
    settings.connect_timeout = 2000ms;
    settings.log = [this](std::string_view line) { log.push_back(nlohmann::json::parse(line)); };
    // 127.0.0.0/8 is always refused; the test's upstreams are there.
    state = std::make_unique<ServerState>(io, std::move(settings),
                                          std::vector<IpRange>{*parse_ip_range("127.0.0.0/8")});
    module->id = "m1";
  }
  ~SessionRig() {
    if (app_fd >= 0) ::close(app_fd);
  }

  void allow(const std::string& ip, std::uint16_t port) {
    EgressDestination destination;
    destination.host = ip;
    destination.port = port;
    destination.is_ip = true;
    module->allowlist.push_back(destination);
  }

  // A connection from the module, as accept(2) would hand it to the server.
  void connect_and_send(const std::string& bytes) {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    app_fd = fds[0];
    ASSERT_EQ(::fcntl(app_fd, F_SETFL, O_NONBLOCK), 0);
    asio::ip::tcp::socket socket(io);
    socket.assign(asio::ip::tcp::v4(), fds[1]);
    std::make_shared<Session>(*state, module, std::move(socket),
                              asio::ip::tcp::endpoint(asio::ip::address_v4::loopback(), 40000))
        ->start();
    ASSERT_EQ(::write(app_fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }

  // Runs the loop until `done` or 5 s.
  bool run_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      io.run_one_for(10ms);
    }
    return true;
  }

  // What the module's end has received, read without blocking.
  static void read_available(int fd, std::string& into) {
    char chunk[4096];
    for (;;) {
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
      if (n <= 0) return;
      into.append(chunk, static_cast<std::size_t>(n));
    }
  }

  // The proxy's answer head.
  std::string answer() {
    run_until([&] {
      read_available(app_fd, received);
      return received.find("\r\n\r\n") != std::string::npos;
    });
    return received;
  }

  // The module hangs up; the session must then end and give its slot back.
  void hang_up() {
    ::close(app_fd);
    app_fd = -1;
    EXPECT_TRUE(run_until([&] { return module->active == 0; }));
    EXPECT_EQ(state->active_total, 0u);
    EXPECT_TRUE(state->sessions.empty());
  }

  [[nodiscard]] const nlohmann::json* line(const std::string& event) const {
    for (const auto& entry : log)
      if (entry["event"] == event) return &entry;
    return nullptr;
  }

  asio::io_context io;
  std::vector<nlohmann::json> log;
  std::unique_ptr<ServerState> state;
  std::shared_ptr<ModuleState> module = std::make_shared<ModuleState>();
  int app_fd = -1;
  std::string received;
};

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
  SessionRig rig(100ms);
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
