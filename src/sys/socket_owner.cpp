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

// The same questions asked of /proc/self/net/tcp and tcp6, for kernels whose sock_diag has no
// inet_diag (built as a module that cannot be loaded: the kernel matrix's guests boot with
// none). One line a socket: "sl local rem st ... uid ...", addresses as the kernel's 32-bit
// words in hex (each word as stored, so compared raw), ports in hex. A request socket is
// listed with its listener's uid and state SYN_RECV, so the state is checked here too.
struct ProcSocket {
  __be32 local[4] = {};
  std::uint16_t local_port = 0;
  __be32 remote[4] = {};
  std::uint16_t remote_port = 0;
  int state = 0;
  uid_t uid = 0;
  unsigned long inode = 0;
};

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

// Each socket of the table of `family` until `visit` returns true. False with errno set when
// the table cannot be read.
bool walk_proc(int family, const std::function<bool(const ProcSocket&)>& visit) {
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
                      &uid, &inode) != 5) {
        continue;
      }
      ProcSocket socket;
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
  static const bool answers = [] {
    DiagRequest request{};
    request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    request.body.sdiag_family = AF_INET;
    request.body.idiag_states = 1U << TCP_LISTEN;
    inet_diag_msg found{};
    return ask(
               request, [](const inet_diag_msg&) { return true; }, found) ||
           errno != EAFNOSUPPORT;
  }();
  return answers;
}

// An address of `family` as the table's words (an IPv4 one in the IPv6 table: mapped).
void table_words(const sockaddr_storage& end, int family, __be32 (&words)[4], std::uint16_t& port) {
  __be16 network_port = 0;
  put_end(end, network_port, words, end.ss_family == AF_INET && family == AF_INET6);
  port = ntohs(network_port);
}

// The far end's line: its local end is our peer, its remote end is us. An IPv4 connection
// accepted by a dual-stack listener is an IPv6 socket at the far end, listed in tcp6 with
// mapped addresses.
bool find_far_end(const sockaddr_storage& local, const sockaddr_storage& peer, ProcSocket& far) {
  for (const int family : {static_cast<int>(peer.ss_family), AF_INET6}) {
    __be32 us[4] = {}, them[4] = {};
    std::uint16_t our_port = 0, their_port = 0;
    table_words(local, family, us, our_port);
    table_words(peer, family, them, their_port);
    const std::size_t bytes = family == AF_INET ? 4 : 16;
    if (walk_proc(family, [&](const ProcSocket& s) {
          if (s.local_port != their_port || s.remote_port != our_port ||
              std::memcmp(s.local, them, bytes) != 0 || std::memcmp(s.remote, us, bytes) != 0) {
            return false;
          }
          far = s;
          return true;
        })) {
      return true;
    }
    if (peer.ss_family != AF_INET) break;
  }
  errno = ENOENT;
  return false;
}

std::optional<uid_t> proc_peer_owner(const sockaddr_storage& local, const sockaddr_storage& peer) {
  ProcSocket far{};
  if (!find_far_end(local, peer, far)) return std::nullopt;
  return judge_far_end(far.state, far.inode, far.uid);
}

bool ends_of(int connected, sockaddr_storage& local, sockaddr_storage& peer) {
  socklen_t local_length = sizeof local;
  socklen_t peer_length = sizeof peer;
  return ::getsockname(connected, reinterpret_cast<sockaddr*>(&local), &local_length) == 0 &&
         ::getpeername(connected, reinterpret_cast<sockaddr*>(&peer), &peer_length) == 0;
}

}  // namespace

std::optional<uid_t> tcp_peer_owner_from_proc(int connected) {
  sockaddr_storage local{};
  sockaddr_storage peer{};
  if (!ends_of(connected, local, peer)) return std::nullopt;
  return proc_peer_owner(local, peer);
}

std::optional<uid_t> tcp_peer_owner(int connected) {
  sockaddr_storage local{};
  sockaddr_storage peer{};
  socklen_t local_length = sizeof local;
  socklen_t peer_length = sizeof peer;
  if (::getsockname(connected, reinterpret_cast<sockaddr*>(&local), &local_length) != 0 ||
      ::getpeername(connected, reinterpret_cast<sockaddr*>(&peer), &peer_length) != 0) {
    return std::nullopt;
  }
  DiagRequest request{};
  request.header.nlmsg_flags = NLM_F_REQUEST;
  request.body.sdiag_family = static_cast<__u8>(peer.ss_family);
  request.body.idiag_states = ~0U;
  // The far end's socket: its source is our peer, its destination is us.
  put_end(peer, request.body.id.idiag_sport, request.body.id.idiag_src);
  put_end(local, request.body.id.idiag_dport, request.body.id.idiag_dst);
  request.body.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  request.body.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  if (!sock_diag_has_inet()) return proc_peer_owner(local, peer);
  inet_diag_msg found{};
  if (!ask(
          request, [](const inet_diag_msg&) { return true; }, found))
    return std::nullopt;
  return judge_far_end(found.idiag_state, found.idiag_inode, found.idiag_uid);
}

std::optional<uid_t> tcp_listener_owner_from_proc(const sockaddr_storage& address) {
  std::optional<uid_t> owner;
  for (const int family : {static_cast<int>(address.ss_family), AF_INET6}) {
    __be32 wanted[4] = {};
    std::uint16_t port = 0;
    table_words(address, family, wanted, port);
    static const __be32 kAny[4] = {};
    const std::size_t bytes = family == AF_INET ? 4 : 16;
    uid_t other = 0;
    const bool found_other = walk_proc(family, [&](const ProcSocket& s) {
      if (s.state != TCP_LISTEN || s.local_port != port) return false;
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
    if (address.ss_family != AF_INET) break;
  }
  if (!owner) errno = ENOENT;
  return owner;
}

std::optional<uid_t> tcp_listener_owner(const sockaddr_storage& address) {
  std::optional<uid_t> owner;
  if (!sock_diag_has_inet()) return tcp_listener_owner_from_proc(address);
  // IPv4: the IPv4 table, then the IPv6 one (a dual-stack listener takes IPv4 connections).
  const bool v4 = address.ss_family == AF_INET;
  const int families[] = {address.ss_family, AF_INET6};
  for (std::size_t f = 0; f < (v4 ? 2U : 1U); ++f) {
    const int family = families[f];
    DiagRequest request{};
    request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    request.body.sdiag_family = static_cast<__u8>(family);
    request.body.idiag_states = 1U << TCP_LISTEN;
    __be16 port = 0;
    __be32 wanted[4] = {};
    put_end(address, port, wanted, v4 && family == AF_INET6);
    const std::size_t length = family == AF_INET ? 4 : 16;
    static const __be32 kAny[4] = {};
    bool seen_root = false;
    inet_diag_msg found{};
    // The first listener that is not root's stops the walk; root's are counted.
    const bool other = ask(
        request,
        [&](const inet_diag_msg& listener) {
          if (listener.id.idiag_sport != port) return false;
          if (std::memcmp(listener.id.idiag_src, wanted, length) != 0 &&
              std::memcmp(listener.id.idiag_src, kAny, length) != 0) {
            return false;
          }
          if (listener.idiag_uid != 0) return true;
          seen_root = true;
          return false;
        },
        found);
    if (other) return found.idiag_uid;
    if (errno != ENOENT) return std::nullopt;
    if (seen_root) owner = 0;
  }
  if (!owner) errno = ENOENT;
  return owner;
}

}  // namespace oarbank
