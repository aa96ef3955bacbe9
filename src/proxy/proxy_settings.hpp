// The proxy's settings: timeouts, limits and DNS servers. The node's configuration fills
// them; the defaults serve when it says nothing. Nothing here can exempt an address from the
// always-refused ranges (that exists for tests only: TestingOnlyExemptions, proxy_server.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace oarbank::proxy {

// Receives one log line (a JSON object, no newline). Called on the event loop's thread.
using LogSink = std::function<void(std::string_view line)>;

// Asked, on the event loop's thread, of each connection accepted on a module's listener (the
// accepted socket's descriptor): "" admits it; anything else refuses it with that reason
// (answered 403 and closed, and logged). For a module whose port any local process can reach
// (sandbox-run unprivileged): only the module's own processes are admitted.
using PeerCheck = std::function<std::string(int fd)>;

struct ProxySettings {
  // From accept to the end of the request head; covers slow senders (slowloris) as a whole.
  std::chrono::milliseconds header_read_timeout{10'000};
  // One name resolution, A and AAAA together.
  std::chrono::milliseconds dns_timeout{5'000};
  // Connecting to the upstream, all of its checked addresses together.
  std::chrono::milliseconds connect_timeout{10'000};
  // A tunnel or forwarded request with no byte moving either way is closed.
  std::chrono::milliseconds idle_timeout{300'000};
  // Client connections handled at once (reading a head, resolving, connecting, relaying).
  std::size_t max_tunnels_per_module = 128;
  std::size_t max_tunnels_total = 1024;
  // Largest request head (request line and fields); a larger one is answered 431.
  std::size_t max_header_bytes = 32 * 1024;
  // RFC 1918, CGNAT 100.64.0.0/10, IPv6 ULA fc00::/7 and local-use NAT64: refused unless true.
  bool allow_private_ranges = false;
  // DNS servers, "192.0.2.53", "192.0.2.53:5353", "[2001:db8::53]:53". Empty: the system's
  // (/etc/resolv.conf, and /etc/hosts). When named, only they are asked (no /etc/hosts).
  std::vector<std::string> dns_servers;
  // Where the log lines go; empty: one line each on stderr.
  LogSink log;
};

}  // namespace oarbank::proxy
