// Loopback test kit for the proxy server: blocking sockets with timeouts (a broken proxy
// fails a test, it does not hang it), scripted upstream servers, a fake DNS server, and the
// proxy running on its own thread.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "oarbank/policy.hpp"
#include "proxy/proxy_server.hpp"

namespace oarbank::proxy::testing {

int listen_tcp(std::uint16_t& port, int backlog = 64);
int connect_tcp(std::uint16_t port);
void send_all(int fd, std::string_view data);
// Reads until `marker` was seen (everything read is returned), EOF, or a 5 s timeout.
std::string recv_until(int fd, std::string_view marker);
std::string recv_all(int fd);
int count_open_fds();
std::uint16_t unused_port();

// Accepts `connections` connections on 127.0.0.1 (one thread) and runs `handler` on each.
class Upstream {
 public:
  explicit Upstream(std::function<void(int)> handler, int connections = 1);
  ~Upstream();
  std::uint16_t port = 0;

 private:
  int listener_ = -1;
  std::thread thread_;
};

// Answers A and AAAA queries over UDP on 127.0.0.1 from a table; NXDOMAIN for other names,
// no answer at all for the names in `silent`.
class FakeDns {
 public:
  FakeDns(std::map<std::string, std::vector<std::string>> table, std::set<std::string> silent = {});
  ~FakeDns();
  [[nodiscard]] std::string server() const { return "127.0.0.1:" + std::to_string(port_); }
  std::atomic<int> queries{0};

 private:
  void serve();
  std::map<std::string, std::vector<std::string>> table_;
  std::set<std::string> silent_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// An allowlist entry for an IP literal; the policy parser refuses loopback, tests need it.
EgressDestination ip_entry(const std::string& ip, std::uint16_t port);
EgressDestination name_entry(const std::string& name, std::uint16_t port);

ProxySettings quick_settings();

// The proxy on its own thread with one module ("m1"); loopback exempted unless told not to.
// How the proxy relays CONNECT tunnels: splice(2) through pipes (production), or through
// buffers (its fallback when it cannot have a pipe).
enum class Relay { Splice, Copy };

class Proxy {
 public:
  Proxy(ProxySettings settings, std::vector<EgressDestination> allowlist,
        bool exempt_loopback = true, Relay relay = Relay::Splice);
  ~Proxy();
  void stop();
  // Adds another module on a fresh listener; returns its port.
  std::uint16_t add_module(const std::string& id, std::vector<EgressDestination> allowlist);
  std::vector<nlohmann::json> log();
  // Waits up to 5 s for `count` log lines with event `event`.
  std::vector<nlohmann::json> wait_for_log(const std::string& event, std::size_t count);

  std::uint16_t port = 0;
  std::unique_ptr<ProxyServer> server;

 private:
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

// The status code of a response head ("HTTP/1.1 403 ..." -> 403), 0 if none.
int status_of(const std::string& response);

}  // namespace oarbank::proxy::testing
