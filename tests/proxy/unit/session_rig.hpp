// A Session made by hand, without the server (admission_test.cpp, forwarding_test.cpp): one
// end of a socketpair is the module's connection, an io_context of the test's own is run a
// step at a time, the log lines are kept as JSON, and 127.0.0.0/8 is exempted so that
// upstreams on loopback can be admitted.
#pragma once

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

namespace oarbank::proxy::test_rig {

using namespace std::chrono_literals;

// A listening socket on 127.0.0.1, port chosen by the kernel.
inline int listen_loopback(std::uint16_t& port) {
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

}  // namespace oarbank::proxy::test_rig
