// oarbank-proxy-bench: the egress proxy against a direct connection, with other proxies (squid,
// tinyproxy) as sides of the same run (docs/performance.md, "Egress proxy"). Driven by
// bench/run-proxy-bench.sh, which builds the network namespace, starts the proxies and the
// upstream servers, and cleans up.
//
//   oarbank-proxy-bench upstream --listen IP:PORT [--listen IP:PORT]...
//       The upstream server (epoll, one thread). Each connection starts with one command byte:
//         'S' + u64 N  sink: read N bytes, then answer the count (8 bytes) and close (no
//                      half-close needed: squid and tinyproxy close a tunnel on the client's EOF);
//         'G' + u64 N  source: send N bytes, then close;
//         'E'          echo every byte until EOF.
//   oarbank-proxy-bench serve --listen IP:PORT --egress IP:PORT... [--exempt RANGE]...
//                             [--max-tunnels N] [--log FILE]
//       ProxyServer (src/proxy) hosted in this process, as `oarbank-agent egress-proxy` hosts
//       it, but with raised tunnel limits and, for the loopback case only, TestingOnlyExemptions
//       (the production proxy always refuses 127.0.0.0/8). The allowlist entries are IP
//       literals built directly, as tests/proxy does: the policy parser refuses loopback ones.
//   oarbank-proxy-bench relay --listen IP:PORT --egress IP:PORT... [--copy]
//       A reference, not a product: the least a CONNECT relay can do. One thread per direction,
//       blocking splice(2) through a pipe (or, with --copy, read/write through a 64 KiB buffer);
//       no parsing beyond the request line, no policy but the --egress list, no limits. Shows
//       what this host allows a relay at all (the bulk and latency sides `ref-splice`, `ref-copy`).
//   oarbank-proxy-bench run --case NAME --target IP:PORT --side LABEL=direct
//                           --side LABEL=proxy:IP:PORT[:PID] ... [--tests bulk,latency,idle]
//                           [--bulk-mib 256] [--rounds 7] [--latency-rounds 200] [--idle 1000]
//                           [--max-seconds 900]
//       The measurements, every side in the same rounds, in a rotating order:
//       (1) bulk: one connection (for a proxy: one CONNECT tunnel, set up before the clock
//           starts) moves N MiB up (client -> upstream sink, until the sink's count comes back)
//           and N MiB down (upstream source -> client). Median over rounds of MiB/s and of the
//           per-round ratio side / direct; the proxy's CPU time per GiB relayed.
//       (2) latency: connect + CONNECT + "200" + first byte echoed, against connect + first byte
//           echoed directly; median over rounds of the per-round difference.
//       (3) idle: N tunnels opened one after another (each checked with one echoed byte) and
//           held; the proxy's memory (VmRSS and Pss, summed over its process tree) before and
//           after, per tunnel; twice (the second time the allocator may reuse the first's memory).
//
// Every socket has a 30 s send/receive timeout and the whole run a --max-seconds alarm, so no
// loop can run on: the driver stops by itself.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "oarbank/policy.hpp"
#include "proxy/ip_address.hpp"
#include "proxy/proxy_server.hpp"

namespace {

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "proxy-bench: %s\n", message.c_str());
  std::exit(1);
}

double now_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

sockaddr_in parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) die("not IP:PORT: " + text);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (::inet_pton(AF_INET, text.substr(0, colon).c_str(), &addr.sin_addr) != 1)
    die("not an IPv4 address: " + text);
  const long port = std::strtol(text.c_str() + colon + 1, nullptr, 10);
  if (port <= 0 || port > 65535) die("bad port: " + text);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  return addr;
}

// ---------------------------------------------------------------------------------------------
// upstream

bool send_all_raw(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

struct UpConn {
  int fd = -1;
  char cmd = 0;
  unsigned char head[9]{};
  std::size_t head_len = 0;
  std::uint64_t count = 0;   // sink: bytes read; source: bytes still to send
  std::uint64_t expect = 0;  // sink: bytes to read
  std::string pending;       // echo: bytes not yet written back
};

int run_upstream(const std::vector<std::string>& listens) {
  ::signal(SIGPIPE, SIG_IGN);
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  std::vector<int> listeners;
  for (const auto& text : listens) {
    const sockaddr_in addr = parse_endpoint(text);
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
      die("upstream: bind " + text + ": " + std::strerror(errno));
    if (::listen(fd, 4096) != 0) die("upstream: listen: " + std::string(std::strerror(errno)));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = static_cast<std::uint64_t>(fd) | (1ULL << 32);
    ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    listeners.push_back(fd);
  }
  std::fprintf(stderr, "upstream: listening\n");
  static char source_buf[1 << 20];
  std::memset(source_buf, 'd', sizeof source_buf);
  static char read_buf[1 << 20];
  std::map<int, std::unique_ptr<UpConn>> conns;
  auto close_conn = [&](int fd) {
    ::close(fd);
    conns.erase(fd);
  };
  auto set_events = [&](int fd, std::uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = static_cast<std::uint64_t>(fd);
    ::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
  };
  // Returns false when the connection was closed.
  auto pump_source = [&](UpConn& c) -> bool {
    while (c.count > 0) {
      const std::size_t chunk =
          static_cast<std::size_t>(std::min<std::uint64_t>(c.count, sizeof source_buf));
      const ssize_t n = ::send(c.fd, source_buf, chunk, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN) {
          set_events(c.fd, EPOLLOUT);
          return true;
        }
        close_conn(c.fd);
        return false;
      }
      c.count -= static_cast<std::uint64_t>(n);
    }
    close_conn(c.fd);
    return false;
  };
  auto pump_echo = [&](UpConn& c) -> bool {
    while (!c.pending.empty()) {
      const ssize_t n = ::send(c.fd, c.pending.data(), c.pending.size(), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN) {
          set_events(c.fd, EPOLLIN | EPOLLOUT);
          return true;
        }
        close_conn(c.fd);
        return false;
      }
      c.pending.erase(0, static_cast<std::size_t>(n));
    }
    set_events(c.fd, EPOLLIN);
    return true;
  };
  std::vector<epoll_event> events(256);
  for (;;) {
    const int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("upstream: epoll_wait");
    }
    for (int i = 0; i < n; ++i) {
      const std::uint64_t tag = events[i].data.u64;
      const int fd = static_cast<int>(tag & 0xffffffffU);
      if ((tag >> 32) != 0) {
        for (;;) {
          const int c = ::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (c < 0) break;
          const int one = 1;
          ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          auto conn = std::make_unique<UpConn>();
          conn->fd = c;
          epoll_event ev{};
          ev.events = EPOLLIN;
          ev.data.u64 = static_cast<std::uint64_t>(c);
          ::epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
          conns[c] = std::move(conn);
        }
        continue;
      }
      auto it = conns.find(fd);
      if (it == conns.end()) continue;
      UpConn& c = *it->second;
      if (c.cmd == 'G' && (events[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0) {
        pump_source(c);
        continue;
      }
      if (c.cmd == 'E' && (events[i].events & EPOLLOUT) != 0) {
        if (!pump_echo(c)) continue;
      }
      // Readable.
      bool open = true;
      while (open) {
        const ssize_t r = ::recv(fd, read_buf, sizeof read_buf, 0);
        if (r < 0) {
          if (errno == EAGAIN) break;
          close_conn(fd);
          open = false;
          break;
        }
        if (r == 0) {
          if (c.cmd == 'E' && !c.pending.empty()) {
            // Best effort: finish echoing what is left, blocking briefly.
            const int flags = ::fcntl(fd, F_GETFL);
            ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
            [[maybe_unused]] auto w = ::send(fd, c.pending.data(), c.pending.size(), MSG_NOSIGNAL);
          }
          close_conn(fd);
          open = false;
          break;
        }
        std::size_t off = 0;
        const auto got = static_cast<std::size_t>(r);
        if (c.cmd == 0) {
          c.cmd = read_buf[0];
          off = 1;
          if (c.cmd != 'S' && c.cmd != 'G' && c.cmd != 'E') {
            close_conn(fd);
            open = false;
            break;
          }
        }
        if (c.cmd == 'S') {
          while (off < got && c.head_len < 8)
            c.head[c.head_len++] = static_cast<unsigned char>(read_buf[off++]);
          if (c.head_len == 8) {
            std::memcpy(&c.expect, c.head, 8);
            c.head_len = 9;
          }
          if (c.head_len == 9) c.count += got - off;
          if (c.head_len == 9 && c.count >= c.expect) {
            const std::uint64_t count = c.count;
            [[maybe_unused]] auto w = ::send(fd, &count, sizeof count, MSG_NOSIGNAL);
            close_conn(fd);
            open = false;
            break;
          }
        } else if (c.cmd == 'G') {
          while (off < got && c.head_len < 8)
            c.head[c.head_len++] = static_cast<unsigned char>(read_buf[off++]);
          if (c.head_len == 8) {
            std::memcpy(&c.count, c.head, 8);
            c.head_len = 9;  // started
            open = pump_source(c);
            break;
          }
        } else if (c.cmd == 'E') {
          c.pending.append(read_buf + off, got - off);
          open = pump_echo(c);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// serve: ProxyServer in this process

oarbank::proxy::ProxyServer* g_server = nullptr;
extern "C" void stop_server(int) {
  if (g_server != nullptr) g_server->stop();
}

int run_serve(const std::string& listen, const std::vector<std::string>& egress,
              const std::vector<std::string>& exempt, std::size_t max_tunnels,
              const std::string& log_path) {
  std::vector<oarbank::EgressDestination> allowlist;
  for (const auto& text : egress) {
    const sockaddr_in addr = parse_endpoint(text);  // checks the form
    allowlist.push_back(oarbank::EgressDestination{text.substr(0, text.rfind(':')),
                                                   ntohs(addr.sin_port), false, true});
  }
  oarbank::proxy::ProxySettings settings;
  settings.max_tunnels_per_module = max_tunnels;
  settings.max_tunnels_total = max_tunnels;
  int log_fd = STDERR_FILENO;
  if (!log_path.empty()) {
    log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (log_fd < 0) die("serve: open " + log_path);
  }
  // The same sink as oarbank-agent's ProxyHost: one write(2) per line.
  settings.log = [log_fd](std::string_view line) {
    std::string text(line);
    text += '\n';
    [[maybe_unused]] auto n = ::write(log_fd, text.data(), text.size());
  };
  oarbank::proxy::TestingOnlyExemptions exemptions;
  for (const auto& text : exempt) {
    auto range = oarbank::proxy::parse_ip_range(text);
    if (!range) die("serve: not a range: " + text);
    exemptions.permitted_ranges.push_back(*range);
  }
  const sockaddr_in addr = parse_endpoint(listen);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    die("serve: bind " + listen + ": " + std::strerror(errno));
  if (::listen(fd, 4096) != 0) die("serve: listen");
  oarbank::proxy::ProxyServer server(std::move(settings), std::move(exemptions));
  server.add_module("bench", std::move(allowlist), fd);
  g_server = &server;
  struct sigaction action {};
  action.sa_handler = stop_server;
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
  server.run();
  g_server = nullptr;
  return 0;
}

// ---------------------------------------------------------------------------------------------
// relay: the reference relay

void relay_direction(int from, int to, bool copy) {
  if (copy) {
    std::vector<char> buf(64 * 1024);
    for (;;) {
      const ssize_t n = ::read(from, buf.data(), buf.size());
      if (n <= 0) break;
      if (!send_all_raw(to, buf.data(), static_cast<std::size_t>(n))) break;
    }
  } else {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return;
    ::fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
    for (;;) {
      const ssize_t n = ::splice(from, nullptr, p[1], nullptr, 1 << 20, SPLICE_F_MOVE);
      if (n <= 0) break;
      ssize_t left = n;
      while (left > 0) {
        const ssize_t w =
            ::splice(p[0], nullptr, to, nullptr, static_cast<std::size_t>(left), SPLICE_F_MOVE);
        if (w <= 0) {
          left = -1;
          break;
        }
        left -= w;
      }
      if (left < 0) break;
    }
    ::close(p[0]);
    ::close(p[1]);
  }
  ::shutdown(to, SHUT_WR);
}

void relay_connection(int client, std::vector<std::string> allowed, bool copy) {
  timeval tv{10, 0};
  ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string head;
  char buf[1024];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 8192) {
    const ssize_t n = ::recv(client, buf, sizeof buf, 0);
    if (n <= 0) {
      ::close(client);
      return;
    }
    head.append(buf, static_cast<std::size_t>(n));
  }
  timeval none{0, 0};
  ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
  std::string target;
  if (head.rfind("CONNECT ", 0) == 0) target = head.substr(8, head.find(' ', 8) - 8);
  if (std::find(allowed.begin(), allowed.end(), target) == allowed.end() ||
      head.size() != head.find("\r\n\r\n") + 4) {
    const char refused[] = "HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n";
    send_all_raw(client, refused, sizeof refused - 1);
    ::close(client);
    return;
  }
  const sockaddr_in to = parse_endpoint(target);
  const int up = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(up, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
    const char failed[] = "HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n";
    send_all_raw(client, failed, sizeof failed - 1);
    ::close(up);
    ::close(client);
    return;
  }
  const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
  send_all_raw(client, ok, sizeof ok - 1);
  std::thread down([=] { relay_direction(up, client, copy); });
  relay_direction(client, up, copy);
  down.join();
  ::close(up);
  ::close(client);
}

int run_relay(const std::string& listen, const std::vector<std::string>& allowed, bool copy) {
  ::signal(SIGPIPE, SIG_IGN);
  const sockaddr_in addr = parse_endpoint(listen);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    die("relay: bind " + listen + ": " + std::strerror(errno));
  if (::listen(fd, 4096) != 0) die("relay: listen");
  for (;;) {
    const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      ::usleep(100'000);
      continue;
    }
    std::thread(relay_connection, c, allowed, copy).detach();
  }
}

// ---------------------------------------------------------------------------------------------
// client side

struct Side {
  std::string label;
  bool direct = true;
  sockaddr_in proxy{};
  pid_t pid = 0;
  // results
  std::vector<double> up_mibs, down_mibs, up_ratio, down_ratio;
  std::vector<double> cpu_ms_per_gib;  // the proxy's CPU per GiB relayed (both directions)
  std::vector<double> lat_us, lat_added_us;
  bool failed = false;
  std::string failure;
};

struct Options {
  std::string case_name = "case";
  sockaddr_in target{};
  std::string target_text;
  std::vector<Side> sides;
  bool bulk = true, latency = true, idle = true;
  std::uint64_t bulk_mib = 256;
  int rounds = 7;
  int latency_rounds = 200;
  int idle_count = 1000;
  int max_seconds = 900;
};

void set_timeouts(int fd) {
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool send_all(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool recv_all(int fd, void* data, std::size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::recv(fd, p, size, 0);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Opens a connection to the target, directly or through a CONNECT tunnel (the tunnel is
// established, "200" read, when this returns). -1 and `error` on failure.
int open_path(const Side& side, const Options& opt, std::string& error) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  set_timeouts(fd);
  const sockaddr_in& to = side.direct ? opt.target : side.proxy;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
    error = std::string("connect: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (side.direct) return fd;
  const std::string request =
      "CONNECT " + opt.target_text + " HTTP/1.1\r\nHost: " + opt.target_text + "\r\n\r\n";
  if (!send_all(fd, request.data(), request.size())) {
    error = "sending CONNECT failed";
    ::close(fd);
    return -1;
  }
  // Read the answer's head byte by byte is slow; read chunks: nothing follows the head until
  // we send (the upstream speaks only when spoken to).
  std::string head;
  char buf[1024];
  while (head.find("\r\n\r\n") == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      error = "no answer to CONNECT" +
              (head.empty() ? std::string() : ": " + head.substr(0, head.find('\r')));
      ::close(fd);
      return -1;
    }
    head.append(buf, static_cast<std::size_t>(n));
    if (head.size() > 16384) break;
  }
  const auto sp = head.find(' ');
  if (sp == std::string::npos || head.compare(sp + 1, 3, "200") != 0) {
    error = "CONNECT refused: " + head.substr(0, head.find('\r'));
    ::close(fd);
    return -1;
  }
  if (head.size() != head.find("\r\n\r\n") + 4) {
    error = "bytes after the CONNECT answer's head";
    ::close(fd);
    return -1;
  }
  return fd;
}

// One echo exchange: 'E' (first use) + one byte, wait for it back.
bool echo_byte(int fd, bool first) {
  const char out[2] = {'E', 'x'};
  if (!send_all(fd, first ? out : out + 1, first ? 2 : 1)) return false;
  char in = 0;
  return recv_all(fd, &in, 1) && in == 'x';
}

struct ProcMem {
  long rss_kib = 0;
  long pss_kib = 0;
  int processes = 0;
};

std::vector<pid_t> process_tree(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  if (DIR* d = ::opendir("/proc")) {
    while (dirent* e = ::readdir(d)) {
      const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
      if (pid <= 0) continue;
      std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
      std::string line;
      std::getline(stat, line);
      const auto close_paren = line.rfind(')');
      if (close_paren == std::string::npos) continue;
      std::istringstream rest(line.substr(close_paren + 2));
      char state = 0;
      pid_t ppid = 0;
      rest >> state >> ppid;
      children[ppid].push_back(pid);
    }
    ::closedir(d);
  }
  std::vector<pid_t> out{root};
  for (std::size_t i = 0; i < out.size(); ++i) {
    for (pid_t c : children[out[i]]) out.push_back(c);
  }
  return out;
}

long field_kib(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + key.size());
  }
  return 0;
}

ProcMem proc_mem(pid_t root) {
  ProcMem m;
  if (root <= 0) return m;
  for (pid_t p : process_tree(root)) {
    const std::string base = "/proc/" + std::to_string(p);
    m.rss_kib += field_kib(base + "/status", "VmRSS:");
    m.pss_kib += field_kib(base + "/smaps_rollup", "Pss:");
    ++m.processes;
  }
  return m;
}

// utime + stime of the process tree (all threads), in ms.
double proc_cpu_ms(pid_t root) {
  if (root <= 0) return 0;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  double total = 0;
  for (pid_t p : process_tree(root)) {
    std::ifstream stat("/proc/" + std::to_string(p) + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto close_paren = line.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(line.substr(close_paren + 2));
    std::string f;
    std::vector<std::string> fields;
    while (rest >> f) fields.push_back(f);
    // fields[0] is state (field 3); utime is field 14, stime 15 -> indexes 11, 12.
    if (fields.size() > 12)
      total += (std::atof(fields[11].c_str()) + std::atof(fields[12].c_str())) * 1000.0 / tick;
  }
  return total;
}

std::vector<char>& bulk_buffer() {
  static std::vector<char> buf(1 << 20, 'u');
  return buf;
}

// Seconds to move `bytes` up (client -> sink, until the sink's count of them is back); <0 on
// failure.
double bulk_up(const Side& side, const Options& opt, std::uint64_t bytes, std::string& error) {
  const int fd = open_path(side, opt, error);
  if (fd < 0) return -1;
  auto& buf = bulk_buffer();
  const double t0 = now_us();
  char request[9];
  request[0] = 'S';
  std::memcpy(request + 1, &bytes, 8);
  bool ok = send_all(fd, request, sizeof request);
  std::uint64_t left = bytes;
  while (ok && left > 0) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(left, buf.size()));
    ok = send_all(fd, buf.data(), chunk);
    left -= chunk;
  }
  std::uint64_t count = 0;
  ok = ok && recv_all(fd, &count, sizeof count);
  const double t1 = now_us();
  ::close(fd);
  if (!ok || count != bytes) {
    error =
        "upload: sink counted " + std::to_string(count) + " of " + std::to_string(bytes) + " bytes";
    return -1;
  }
  return (t1 - t0) / 1e6;
}

double bulk_down(const Side& side, const Options& opt, std::uint64_t bytes, std::string& error) {
  const int fd = open_path(side, opt, error);
  if (fd < 0) return -1;
  auto& buf = bulk_buffer();
  const double t0 = now_us();
  char request[9];
  request[0] = 'G';
  std::memcpy(request + 1, &bytes, 8);
  bool ok = send_all(fd, request, sizeof request);
  std::uint64_t got = 0;
  while (ok && got < bytes) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      ok = false;
      break;
    }
    got += static_cast<std::uint64_t>(n);
  }
  const double t1 = now_us();
  ::close(fd);
  if (!ok || got != bytes) {
    error = "download: received " + std::to_string(got) + " of " + std::to_string(bytes) + " bytes";
    return -1;
  }
  return (t1 - t0) / 1e6;
}

// Microseconds for: connect (+ CONNECT + 200) + one byte echoed. <0 on failure.
double handshake_us(const Side& side, const Options& opt, std::string& error) {
  const double t0 = now_us();
  const int fd = open_path(side, opt, error);
  if (fd < 0) return -1;
  const bool ok = echo_byte(fd, true);
  const double t1 = now_us();
  ::close(fd);
  if (!ok) {
    error = "no echo";
    return -1;
  }
  return t1 - t0;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

std::string med3(const std::vector<double>& v, const char* fmt) {
  if (v.empty()) return "n/a";
  char b[160];
  char f[64];
  std::snprintf(f, sizeof f, "%s [%s, %s]", fmt, fmt, fmt);
  std::snprintf(b, sizeof b, f, quantile(v, 0.5), quantile(v, 0.1), quantile(v, 0.9));
  return b;
}

std::string fmt1(const char* fmt, double x) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, x);
  return b;
}

void run_bulk(Options& opt) {
  const std::uint64_t bytes = opt.bulk_mib << 20;
  const std::size_t n = opt.sides.size();
  std::size_t direct_index = n;
  for (std::size_t i = 0; i < n; ++i)
    if (opt.sides[i].direct) direct_index = i;
  // One warm-up transfer each way per side (not counted), then the rounds.
  for (int round = -1; round < opt.rounds; ++round) {
    std::vector<double> up(n, -1), down(n, -1);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = (k + static_cast<std::size_t>(round + 1)) % n;
      Side& s = opt.sides[i];
      if (s.failed) continue;
      std::string error;
      const double cpu0 = proc_cpu_ms(s.pid);
      const std::uint64_t moved = round < 0 ? (16ULL << 20) : bytes;
      up[i] = bulk_up(s, opt, moved, error);
      if (up[i] >= 0) down[i] = bulk_down(s, opt, moved, error);
      const double cpu1 = proc_cpu_ms(s.pid);
      if (up[i] < 0 || down[i] < 0) {
        s.failed = true;
        s.failure = error;
        std::fprintf(stderr, "proxy-bench: %s: %s: side dropped\n", s.label.c_str(), error.c_str());
        continue;
      }
      if (round < 0) continue;
      s.up_mibs.push_back(static_cast<double>(opt.bulk_mib) / up[i]);
      s.down_mibs.push_back(static_cast<double>(opt.bulk_mib) / down[i]);
      if (s.pid > 0)
        s.cpu_ms_per_gib.push_back((cpu1 - cpu0) /
                                   (2.0 * static_cast<double>(opt.bulk_mib) / 1024.0));
    }
    if (round < 0 || direct_index == n || up[direct_index] < 0) continue;
    for (std::size_t i = 0; i < n; ++i) {
      if (up[i] < 0 || down[i] < 0) continue;
      opt.sides[i].up_ratio.push_back(up[direct_index] /
                                      up[i]);  // throughput ratio = time ratio inverted
      opt.sides[i].down_ratio.push_back(down[direct_index] / down[i]);
    }
    std::fprintf(stderr, "proxy-bench: %s bulk round %d/%d done\n", opt.case_name.c_str(),
                 round + 1, opt.rounds);
  }
  std::printf("\n### %s: bulk throughput, one connection, %" PRIu64
              " MiB each way, %d rounds (median [p10, p90])\n\n",
              opt.case_name.c_str(), opt.bulk_mib, opt.rounds);
  std::printf(
      "| side | up MiB/s | up ÷ direct | down MiB/s | down ÷ direct | proxy CPU ms per GiB relayed "
      "|\n");
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  for (const auto& s : opt.sides) {
    if (s.up_mibs.empty()) {
      std::printf("| %s | failed: %s | | | | |\n", s.label.c_str(), s.failure.c_str());
      continue;
    }
    std::printf(
        "| %s | %s | %s | %s | %s | %s |\n", s.label.c_str(), med3(s.up_mibs, "%.0f").c_str(),
        s.direct ? "1" : med3(s.up_ratio, "%.3f").c_str(), med3(s.down_mibs, "%.0f").c_str(),
        s.direct ? "1" : med3(s.down_ratio, "%.3f").c_str(),
        s.cpu_ms_per_gib.empty() ? "" : fmt1("%.0f", quantile(s.cpu_ms_per_gib, 0.5)).c_str());
  }
  std::fflush(stdout);
}

void run_latency(Options& opt) {
  const std::size_t n = opt.sides.size();
  std::size_t direct_index = n;
  for (std::size_t i = 0; i < n; ++i)
    if (opt.sides[i].direct) direct_index = i;
  for (auto& s : opt.sides) s.failed = false;
  const int warmup = 10;
  // Each proxy's CPU over all its handshakes (and their teardown): it serves nothing else.
  // From stat's utime + stime, which count threads that have ended (tinyproxy runs a thread
  // per connection) but in 10 ms ticks: take 1,000 rounds or more for this figure.
  std::vector<double> cpu_start(n, 0);
  for (std::size_t i = 0; i < n; ++i) cpu_start[i] = proc_cpu_ms(opt.sides[i].pid);
  for (int round = -warmup; round < opt.latency_rounds; ++round) {
    std::vector<double> t(n, -1);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = (k + static_cast<std::size_t>(round + warmup)) % n;
      Side& s = opt.sides[i];
      if (s.failed) continue;
      std::string error;
      t[i] = handshake_us(s, opt, error);
      if (t[i] < 0) {
        s.failed = true;
        s.failure = error;
        std::fprintf(stderr, "proxy-bench: %s: %s: side dropped\n", s.label.c_str(), error.c_str());
      }
    }
    if (round < 0) continue;
    for (std::size_t i = 0; i < n; ++i) {
      if (t[i] < 0) continue;
      opt.sides[i].lat_us.push_back(t[i]);
      if (direct_index < n && t[direct_index] >= 0)
        opt.sides[i].lat_added_us.push_back(t[i] - t[direct_index]);
    }
  }
  ::usleep(100'000);  // the last connections' teardown
  std::vector<double> cpu_per_handshake(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    if (opt.sides[i].pid > 0 && !opt.sides[i].failed) {
      cpu_per_handshake[i] =
          (proc_cpu_ms(opt.sides[i].pid) - cpu_start[i]) * 1000.0 / (opt.latency_rounds + warmup);
    }
  }
  std::printf("\n### %s: CONNECT handshake, %d rounds (median [p10, p90])\n\n",
              opt.case_name.c_str(), opt.latency_rounds);
  std::printf(
      "Proxy sides: connect to the proxy + CONNECT + `200` read + one byte echoed by the upstream. "
      "Direct: connect + one byte echoed. Added = per-round difference to direct. "
      "Proxy CPU: the proxy's processes and threads (utime + stime, in 10 ms ticks), over all "
      "rounds, per handshake with its teardown.\n\n");
  std::printf(
      "| side | total µs | added over direct µs | proxy CPU µs per handshake |\n| --- | --- | --- "
      "| --- |\n");
  for (const auto& s : opt.sides) {
    if (s.lat_us.empty()) {
      std::printf("| %s | failed: %s | | |\n", s.label.c_str(), s.failure.c_str());
      continue;
    }
    const std::size_t i = static_cast<std::size_t>(&s - opt.sides.data());
    std::printf("| %s | %s | %s | %s |\n", s.label.c_str(), med3(s.lat_us, "%.0f").c_str(),
                s.direct ? "0" : med3(s.lat_added_us, "%.0f").c_str(),
                cpu_per_handshake[i] < 0 ? "" : fmt1("%.0f", cpu_per_handshake[i]).c_str());
  }
  std::fflush(stdout);
}

struct IdleResult {
  int opened = 0;
  std::string stop_reason;
  ProcMem before, after, closed;
  int alive = 0;
};

IdleResult idle_once(const Side& s, const Options& opt) {
  IdleResult r;
  ::usleep(300'000);
  r.before = proc_mem(s.pid);
  std::vector<int> fds;
  fds.reserve(static_cast<std::size_t>(opt.idle_count));
  for (int i = 0; i < opt.idle_count; ++i) {
    std::string error;
    const int fd = open_path(s, opt, error);
    if (fd < 0) {
      r.stop_reason = "tunnel " + std::to_string(i + 1) + ": " + error;
      break;
    }
    if (!echo_byte(fd, true)) {
      r.stop_reason = "tunnel " + std::to_string(i + 1) + ": no echo";
      ::close(fd);
      break;
    }
    fds.push_back(fd);
  }
  r.opened = static_cast<int>(fds.size());
  ::usleep(1'000'000);
  r.after = proc_mem(s.pid);
  for (int fd : fds) r.alive += echo_byte(fd, false) ? 1 : 0;
  for (int fd : fds) ::close(fd);
  ::usleep(1'500'000);
  r.closed = proc_mem(s.pid);
  return r;
}

std::vector<std::string> idle_lines;

void run_idle(Options& opt) {
  std::printf(
      "\n### %s: %d concurrent idle tunnels (each checked with one echoed byte), the proxy's "
      "memory\n\n",
      opt.case_name.c_str(), opt.idle_count);
  std::printf(
      "Memory: VmRSS and Pss summed over the proxy's process tree, KiB. Per tunnel = (held − "
      "before) ÷ tunnels held. "
      "Pass 2 repeats pass 1 after all of pass 1's tunnels were closed.\n\n");
  std::printf(
      "| side | pass | tunnels held | still echoing | RSS before | RSS held | **RSS per tunnel** | "
      "Pss per tunnel | RSS after closing | processes | stopped by |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (auto& s : opt.sides) {
    if (s.direct || s.label.rfind("ref-", 0) == 0)
      continue;  // the reference relays: threads, not measured
    for (int pass = 1; pass <= 2; ++pass) {
      const IdleResult r = idle_once(s, opt);
      const double per_rss =
          r.opened > 0 ? static_cast<double>(r.after.rss_kib - r.before.rss_kib) / r.opened : 0;
      const double per_pss =
          r.opened > 0 ? static_cast<double>(r.after.pss_kib - r.before.pss_kib) / r.opened : 0;
      std::printf("| %s | %d | %d | %d | %ld | %ld | **%.1f KiB** | %.1f KiB | %ld | %d | %s |\n",
                  s.label.c_str(), pass, r.opened, r.alive, r.before.rss_kib, r.after.rss_kib,
                  per_rss, per_pss, r.closed.rss_kib, r.after.processes,
                  r.stop_reason.empty() ? "-" : r.stop_reason.c_str());
      if (pass == 1) {
        char line[512];
        std::snprintf(line, sizeof line, "IDLE | %s | %d of %d | %.1f KiB | %.1f KiB | %s |",
                      s.label.c_str(), r.opened, opt.idle_count, per_rss, per_pss,
                      r.stop_reason.empty() ? "-" : r.stop_reason.c_str());
        idle_lines.emplace_back(line);
      }
      std::fflush(stdout);
    }
  }
}

void summary(const Options& opt) {
  const Side* ours = nullptr;
  for (const auto& s : opt.sides)
    if (!s.direct && s.label.rfind("ours", 0) == 0 && !s.up_ratio.empty()) {
      ours = &s;
      break;
    }
  for (const auto& s : opt.sides) {
    if (s.direct) continue;
    std::string line = "SUMMARY | " + opt.case_name + " | " + s.label;
    if (!s.up_ratio.empty()) {
      line += " | up " + fmt1("%.2f", quantile(s.up_ratio, 0.5)) + " / down " +
              fmt1("%.2f", quantile(s.down_ratio, 0.5)) + " × direct";
      const double worst = std::min(quantile(s.up_ratio, 0.5), quantile(s.down_ratio, 0.5));
      line += worst >= 0.8 ? " (≥ 0.80: met)" : " (< 0.80: not met)";
    } else {
      line += " | bulk n/a";
    }
    line += s.lat_added_us.empty()
                ? " | latency n/a"
                : " | +" + fmt1("%.0f", quantile(s.lat_added_us, 0.5)) + " µs handshake";
    if (s.label.rfind("ours", 0) == 0 || s.label.rfind("ref-", 0) == 0 || ours == nullptr ||
        s.up_ratio.empty()) {
      line += " | -";
    } else {
      const bool faster = quantile(ours->up_mibs, 0.5) > quantile(s.up_mibs, 0.5) &&
                          quantile(ours->down_mibs, 0.5) > quantile(s.down_mibs, 0.5);
      line += std::string(" | ") + ours->label +
              (faster ? " faster both ways" : " NOT faster both ways");
      if (!ours->lat_added_us.empty() && !s.lat_added_us.empty()) {
        line += quantile(ours->lat_added_us, 0.5) < quantile(s.lat_added_us, 0.5)
                    ? ", quicker handshake"
                    : ", NOT quicker handshake";
      }
    }
    std::printf("%s |\n", line.c_str());
  }
}

int run_client(Options& opt) {
  ::signal(SIGPIPE, SIG_IGN);
  ::alarm(
      static_cast<unsigned>(opt.max_seconds));  // hard stop: the default action ends the process
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_cur < static_cast<rlim_t>(opt.idle_count) + 64) {
    lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, static_cast<rlim_t>(opt.idle_count) + 64);
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  if (opt.bulk) run_bulk(opt);
  if (opt.latency) run_latency(opt);
  if (opt.idle) run_idle(opt);
  std::printf("\n");
  if (opt.bulk || opt.latency) summary(opt);
  for (const auto& line : idle_lines) std::printf("%s\n", line.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2)
    die("usage: oarbank-proxy-bench upstream|serve|run ... (see the comment at the top of "
        "bench/proxy_bench.cpp)");
  const std::string mode = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  auto value = [&](std::size_t& i) -> std::string {
    if (i + 1 >= args.size()) die(args[i] + " needs a value");
    return args[++i];
  };
  try {
    if (mode == "upstream") {
      std::vector<std::string> listens;
      for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--listen")
          listens.push_back(value(i));
        else
          die("upstream: unknown argument " + args[i]);
      }
      if (listens.empty()) die("upstream: --listen IP:PORT");
      return run_upstream(listens);
    }
    if (mode == "serve") {
      std::string listen, log;
      std::vector<std::string> exempt, egress;
      std::size_t max_tunnels = 4096;
      for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--listen")
          listen = value(i);
        else if (args[i] == "--egress")
          egress.push_back(value(i));
        else if (args[i] == "--exempt")
          exempt.push_back(value(i));
        else if (args[i] == "--max-tunnels")
          max_tunnels = std::stoul(value(i));
        else if (args[i] == "--log")
          log = value(i);
        else
          die("serve: unknown argument " + args[i]);
      }
      if (listen.empty() || egress.empty()) die("serve: --listen IP:PORT --egress IP:PORT...");
      return run_serve(listen, egress, exempt, max_tunnels, log);
    }
    if (mode == "relay") {
      std::string listen;
      std::vector<std::string> egress;
      bool copy = false;
      for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--listen")
          listen = value(i);
        else if (args[i] == "--egress")
          egress.push_back(value(i));
        else if (args[i] == "--copy")
          copy = true;
        else
          die("relay: unknown argument " + args[i]);
      }
      if (listen.empty() || egress.empty()) die("relay: --listen IP:PORT --egress IP:PORT...");
      return run_relay(listen, egress, copy);
    }
    if (mode == "run") {
      Options opt;
      for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--case")
          opt.case_name = value(i);
        else if (a == "--target") {
          opt.target_text = value(i);
          opt.target = parse_endpoint(opt.target_text);
        } else if (a == "--side") {
          const std::string spec = value(i);
          const auto eq = spec.find('=');
          if (eq == std::string::npos) die("--side LABEL=direct|LABEL=proxy:IP:PORT[:PID]");
          Side s;
          s.label = spec.substr(0, eq);
          const std::string what = spec.substr(eq + 1);
          if (what == "direct") {
            s.direct = true;
          } else if (what.rfind("proxy:", 0) == 0) {
            s.direct = false;
            std::string rest = what.substr(6);
            // IP:PORT[:PID]
            const auto first = rest.find(':');
            const auto second = rest.find(':', first + 1);
            if (second != std::string::npos) {
              s.pid = static_cast<pid_t>(std::stol(rest.substr(second + 1)));
              rest = rest.substr(0, second);
            }
            s.proxy = parse_endpoint(rest);
          } else {
            die("--side " + spec + ": expected direct or proxy:IP:PORT[:PID]");
          }
          opt.sides.push_back(std::move(s));
        } else if (a == "--tests") {
          const std::string t = value(i);
          opt.bulk = t.find("bulk") != std::string::npos;
          opt.latency = t.find("latency") != std::string::npos;
          opt.idle = t.find("idle") != std::string::npos;
        } else if (a == "--bulk-mib")
          opt.bulk_mib = std::stoull(value(i));
        else if (a == "--rounds")
          opt.rounds = std::stoi(value(i));
        else if (a == "--latency-rounds")
          opt.latency_rounds = std::stoi(value(i));
        else if (a == "--idle")
          opt.idle_count = std::stoi(value(i));
        else if (a == "--max-seconds")
          opt.max_seconds = std::stoi(value(i));
        else
          die("run: unknown argument " + a);
      }
      if (opt.target_text.empty() || opt.sides.empty())
        die("run: --target IP:PORT and at least one --side");
      if (opt.bulk_mib == 0 || opt.bulk_mib > 4096 || opt.rounds < 1 || opt.rounds > 100 ||
          opt.latency_rounds < 1 || opt.latency_rounds > 100000 || opt.idle_count < 1 ||
          opt.idle_count > 10000 || opt.max_seconds < 1)
        die("run: a count is out of range (bulk-mib 1-4096, rounds 1-100, latency-rounds 1-100000, "
            "idle 1-10000)");
      return run_client(opt);
    }
  } catch (const std::exception& e) {
    die(e.what());
  }
  die("unknown mode " + mode + " (upstream, serve, run)");
}
