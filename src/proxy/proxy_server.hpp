// The agent's egress proxy: the API that `sandbox-run` and `oarbank-agent egress-proxy` use.
// Protocol, decision rules, log format: docs/proxy.md.
//
//   ProxyServer server(settings);
//   server.add_module("resize-1.4.2", policy.egress, listening_fd);  // one per module
//   std::thread loop([&] { server.run(); });  // or run() on the calling thread
//   ...
//   server.stop();  // from any thread or a signal handler
//   loop.join();
//
// Each module has its own listening socket, so the proxy always knows whose allowlist
// applies: a connection accepted on a module's socket is judged by that module's allowlist
// and nothing else. The caller creates the socket (bound and listening, possibly inside the
// module's network namespace) and hands it over.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "oarbank/policy.hpp"
#include "proxy/ip_address.hpp"
#include "proxy/proxy_settings.hpp"

namespace oarbank::proxy {

// TEST ONLY. Address ranges the proxy may connect to although they are always refused
// (loopback, the node's own addresses, ...), so that tests can run upstream servers on
// 127.0.0.1. Production code never builds one: it is no part of ProxySettings, and no node
// configuration key reaches it.
struct TestingOnlyExemptions {
  std::vector<IpRange> permitted_ranges;
  // Relay CONNECT tunnels through buffers, as the proxy does when it cannot have a pipe (out
  // of descriptors), so that tests cover that path too.
  bool relay_tunnels_by_copy = false;
};

class ProxyServer {
 public:
  // Throws std::invalid_argument on unusable settings (a malformed DNS server, a zero limit
  // or timeout, max_header_bytes outside 1 KiB - 1 MiB).
  explicit ProxyServer(ProxySettings settings);
  ProxyServer(ProxySettings settings, TestingOnlyExemptions exemptions);
  // Closes every socket. Call it after run() returned, or without having called run().
  ~ProxyServer();
  ProxyServer(const ProxyServer&) = delete;
  ProxyServer& operator=(const ProxyServer&) = delete;

  // Serves `module_id` on `listening_fd`, a TCP socket (IPv4 or IPv6) already bound and
  // listening; the proxy owns it from now on (it is closed even when this throws). Callable
  // before run() and from any thread while it runs. Throws std::invalid_argument when the
  // fd is not a listening TCP socket or the module already has one, std::logic_error after
  // stop().
  // `peer_check`: see PeerCheck (proxy_settings.hpp); empty: every connection is admitted.
  void add_module(const std::string& module_id, std::vector<EgressDestination> allowlist,
                  int listening_fd, PeerCheck peer_check = {});

  // Closes the module's listening socket and ends its connections. Any thread; no-op for an
  // unknown module.
  void remove_module(const std::string& module_id);

  // Runs the event loop on the calling thread (single-threaded) until stop(); then every
  // listening socket and connection is closed, and run() returns.
  void run();

  // Asks run() to return. Thread-safe and async-signal-safe (one write(2) to an eventfd);
  // may be called before run(), and more than once.
  void stop() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int stop_fd_ = -1;  // the eventfd stop() writes to; owned by impl_
};

}  // namespace oarbank::proxy
