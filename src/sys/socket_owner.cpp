#include "sys/socket_owner.hpp"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "sys/unique_fd.hpp"

namespace oarbank {
namespace {

struct DiagRequest {
  nlmsghdr header;
  inet_diag_req_v2 body;
};

// The owner of the far end as the kernel lists it: only a socket that has been accepted (it has
// an inode) says who serves the connection: the accepting process's user. Before accept the
// kernel reports root (Linux 6.12: no inode yet) or the listener's owner (later kernels), and
// a request socket (SYN_RECV, kept so by TCP_DEFER_ACCEPT) root: not yet an answer (EAGAIN).
// Closed before it could be seen (a timewait socket, listed as root's): ECONNRESET.
std::optional<uid_t> judge_far_end(int state, unsigned long inode, uid_t uid) {
  const bool open = state == TCP_ESTABLISHED || state == TCP_CLOSE_WAIT;
  if (open && inode != 0) return uid;
  errno = open || state == TCP_SYN_RECV ? EAGAIN : ECONNRESET;
  return std::nullopt;
}

// The address and port of one end, as inet_diag's id spells them (network order). An IPv4
// address asked of the IPv6 table is its mapped form (::ffff:a.b.c.d).
void put_end(const sockaddr_storage& end, __be16& port, __be32 (&address)[4], bool mapped = false) {
  if (end.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(end);
    port = v4.sin_port;
    if (mapped) {
      address[2] = htonl(0xffff);
      std::memcpy(&address[3], &v4.sin_addr, sizeof v4.sin_addr);
    } else {
      std::memcpy(address, &v4.sin_addr, sizeof v4.sin_addr);
    }
  } else {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(end);
    port = v6.sin6_port;
    std::memcpy(address, &v6.sin6_addr, sizeof v6.sin6_addr);
  }
}

// Sends `request` on a new NETLINK_SOCK_DIAG socket and hands each answer to `visit`, until it
// returns true (then that answer is copied to `found`) or the kernel is done. sock_diag
// answers unprivileged callers. False with errno: nothing matched (ENOENT), no inet_diag for
// the family (EAFNOSUPPORT), or the error of a call.
bool ask(DiagRequest request, const std::function<bool(const inet_diag_msg&)>& visit,
         inet_diag_msg& found) {
  UniqueFd diag(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!diag.valid()) return false;
  const bool dump = (request.header.nlmsg_flags & NLM_F_DUMP) != 0;
  request.header.nlmsg_len = sizeof request;
  request.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  request.body.sdiag_protocol = IPPROTO_TCP;
  if (::send(diag.get(), &request, sizeof request, 0) != static_cast<ssize_t>(sizeof request)) {
    return false;
  }
  alignas(nlmsghdr) char buffer[16384];
  for (;;) {
    const ssize_t got = ::recv(diag.get(), buffer, sizeof buffer, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    auto remaining = static_cast<unsigned>(got);
    for (auto* message = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(message, remaining);
         message = NLMSG_NEXT(message, remaining)) {
      if (message->nlmsg_type == NLMSG_DONE) {
        errno = ENOENT;
        return false;
      }
      if (message->nlmsg_type == NLMSG_ERROR) {
        const int error = -static_cast<const nlmsgerr*>(NLMSG_DATA(message))->error;
        // A dump answers ENOENT only when the family has no handler (no inet_diag); an exact
        // lookup answers it for a socket that is not there.
        errno = error == 0 ? ENOENT : (dump && error == ENOENT ? EAFNOSUPPORT : error);
        return false;
      }
      if (message->nlmsg_type != SOCK_DIAG_BY_FAMILY) continue;
      const auto* answer = static_cast<const inet_diag_msg*>(NLMSG_DATA(message));
      if (visit(*answer)) {
        found = *answer;
        return true;
      }
    }
    if (!dump) {  // an exact lookup answers with one message and no NLMSG_DONE
      errno = ENOENT;
      return false;
    }
  }
}

// One socket of the kernel's TCP table as either source lists it: addresses as the kernel's
// 32-bit words (network order), ports in host order.
struct TableSocket {
  __be32 local[4] = {};
  std::uint16_t local_port = 0;
  __be32 remote[4] = {};
  std::uint16_t remote_port = 0;
  int state = 0;
  uid_t uid = 0;
  unsigned long inode = 0;
};

using Visit = std::function<bool(const TableSocket&)>;

TableSocket from_diag(const inet_diag_msg& message) {
  TableSocket socket;
  std::memcpy(socket.local, message.id.idiag_src, sizeof socket.local);
  std::memcpy(socket.remote, message.id.idiag_dst, sizeof socket.remote);
  socket.local_port = ntohs(message.id.idiag_sport);
  socket.remote_port = ntohs(message.id.idiag_dport);
  socket.state = message.idiag_state;
  socket.uid = message.idiag_uid;
  socket.inode = message.idiag_inode;
  return socket;
}

// The sockets of `family` in `states` (a bit per TCP state) by sock_diag, until `visit` returns
// true. False with errno: ENOENT (none matched), EAFNOSUPPORT (no inet_diag), another error.
bool walk_diag(int family, unsigned states, const Visit& visit) {
  DiagRequest request{};
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request.body.sdiag_family = static_cast<__u8>(family);
  request.body.idiag_states = states;
  inet_diag_msg found{};
  return ask(
      request, [&](const inet_diag_msg& message) { return visit(from_diag(message)); }, found);
}

// The same of /proc/self/net/tcp and tcp6, for kernels whose sock_diag has no inet_diag (built
// as a module that cannot be loaded: the kernel matrix's guests boot with none). One line a
// socket: "sl local rem st ... uid timeout inode ...", addresses as the kernel's 32-bit words in
// hex (each word as stored, so compared raw), ports in hex.
bool parse_end(const char* text, __be32 (&address)[4], std::uint16_t& port, std::size_t words) {
  if (std::strlen(text) != 8 * words + 5) return false;  // "WORDS:PORT", as the kernel prints
  for (std::size_t i = 0; i < words; ++i) {
    unsigned value = 0;
    if (std::sscanf(text + 8 * i, "%8X", &value) != 1) return false;
    address[i] = static_cast<__be32>(value);
  }
  unsigned p = 0;
  if (text[8 * words] != ':' || std::sscanf(text + 8 * words + 1, "%4X", &p) != 1) return false;
  port = static_cast<std::uint16_t>(p);
  return true;
}

bool walk_proc(int family, unsigned states, const Visit& visit) {
  FILE* table = std::fopen(family == AF_INET ? "/proc/self/net/tcp" : "/proc/self/net/tcp6", "re");
  if (table == nullptr) return false;
  const std::size_t words = family == AF_INET ? 1 : 4;
  char line[512];
  bool found = false;
  if (std::fgets(line, sizeof line, table) != nullptr) {  // the heading
    while (!found && std::fgets(line, sizeof line, table) != nullptr) {
      char local[64], remote[64];
      unsigned state = 0, uid = 0;
      unsigned long inode = 0;
      if (std::sscanf(line, " %*u: %63s %63s %X %*s %*s %*s %u %*u %lu", local, remote, &state,
                      &uid, &inode) != 5 ||
          state >= 32 || (states & (1U << state)) == 0) {
        continue;
      }
      TableSocket socket;
      if (!parse_end(local, socket.local, socket.local_port, words) ||
          !parse_end(remote, socket.remote, socket.remote_port, words)) {
        continue;
      }
      socket.state = static_cast<int>(state);
      socket.uid = uid;
      socket.inode = inode;
      found = visit(socket);
    }
  }
  std::fclose(table);
  errno = ENOENT;
  return found;
}

// Whether sock_diag answers for TCP here (inet_diag loaded or built in); asked once.
bool sock_diag_has_inet() {
  static const bool answers =
      walk_diag(AF_INET, 1U << TCP_LISTEN, [](const TableSocket&) { return true; }) ||
      errno != EAFNOSUPPORT;
  return answers;
}

enum class Source { Diag, Proc };

Source source() { return sock_diag_has_inet() ? Source::Diag : Source::Proc; }

bool walk(Source from, int family, unsigned states, const Visit& visit) {
  return from == Source::Diag ? walk_diag(family, states, visit) : walk_proc(family, states, visit);
}

// The tables a connection to or from `address` may be in: its family's and, for IPv4, the
// IPv6 one too (a dual-stack socket takes IPv4 connections, listed with mapped addresses).
std::vector<int> tables_for(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) return {AF_INET, AF_INET6};
  return {address.ss_family};
}

// An address as `family`'s table words and its port in host order.
void table_words(const sockaddr_storage& end, int family, __be32 (&words)[4], std::uint16_t& port) {
  __be16 network_port = 0;
  put_end(end, network_port, words, end.ss_family == AF_INET && family == AF_INET6);
  port = ntohs(network_port);
}

bool ends_of(int connected, sockaddr_storage& local, sockaddr_storage& peer) {
  socklen_t local_length = sizeof local;
  socklen_t peer_length = sizeof peer;
  return ::getsockname(connected, reinterpret_cast<sockaddr*>(&local), &local_length) == 0 &&
         ::getpeername(connected, reinterpret_cast<sockaddr*>(&peer), &peer_length) == 0;
}

// The far end of `connected`: the socket whose local end is our peer and whose remote end is
// us. sock_diag asks for it alone (an exact lookup, every 2 ms while the relay waits); /proc is
// read through.
std::optional<uid_t> peer_owner(Source from, int connected) {
  sockaddr_storage local{};
  sockaddr_storage peer{};
  if (!ends_of(connected, local, peer)) return std::nullopt;
  TableSocket far;
  if (from == Source::Diag) {
    DiagRequest request{};
    request.header.nlmsg_flags = NLM_F_REQUEST;
    request.body.sdiag_family = static_cast<__u8>(peer.ss_family);
    request.body.idiag_states = ~0U;
    put_end(peer, request.body.id.idiag_sport, request.body.id.idiag_src);
    put_end(local, request.body.id.idiag_dport, request.body.id.idiag_dst);
    request.body.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    request.body.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    inet_diag_msg found{};
    if (!ask(
            request, [](const inet_diag_msg&) { return true; }, found))
      return std::nullopt;
    far = from_diag(found);
  } else {
    bool seen = false;
    for (const int family : tables_for(peer)) {
      __be32 us[4] = {}, them[4] = {};
      std::uint16_t our_port = 0, their_port = 0;
      table_words(local, family, us, our_port);
      table_words(peer, family, them, their_port);
      const std::size_t bytes = family == AF_INET ? 4 : 16;
      seen = walk_proc(family, ~0U, [&](const TableSocket& s) {
        if (s.local_port != their_port || s.remote_port != our_port ||
            std::memcmp(s.local, them, bytes) != 0 || std::memcmp(s.remote, us, bytes) != 0) {
          return false;
        }
        far = s;
        return true;
      });
      if (seen) break;
    }
    if (!seen) return std::nullopt;
  }
  return judge_far_end(far.state, far.inode, far.uid);
}

// The first listener taking `address` that is not root's; else 0 when root's listen there;
// else nullopt (ENOENT, or the source's error).
std::optional<uid_t> listener_owner(Source from, const sockaddr_storage& address) {
  std::optional<uid_t> owner;
  for (const int family : tables_for(address)) {
    __be32 wanted[4] = {};
    std::uint16_t port = 0;
    table_words(address, family, wanted, port);
    static const __be32 kAny[4] = {};
    const std::size_t bytes = family == AF_INET ? 4 : 16;
    uid_t other = 0;
    const bool found_other = walk(from, family, 1U << TCP_LISTEN, [&](const TableSocket& s) {
      if (s.local_port != port) return false;
      if (std::memcmp(s.local, wanted, bytes) != 0 && std::memcmp(s.local, kAny, bytes) != 0) {
        return false;
      }
      if (s.uid == 0) {
        owner = 0;
        return false;
      }
      other = s.uid;
      return true;
    });
    if (found_other) return other;
    if (errno != ENOENT) return std::nullopt;
  }
  if (!owner) errno = ENOENT;
  return owner;
}

}  // namespace

std::optional<uid_t> tcp_peer_owner(int connected) { return peer_owner(source(), connected); }

std::optional<uid_t> tcp_peer_owner_from_proc(int connected) {
  return peer_owner(Source::Proc, connected);
}

std::optional<uid_t> tcp_listener_owner(const sockaddr_storage& address) {
  return listener_owner(source(), address);
}

std::optional<uid_t> tcp_listener_owner_from_proc(const sockaddr_storage& address) {
  return listener_owner(Source::Proc, address);
}

}  // namespace oarbank
