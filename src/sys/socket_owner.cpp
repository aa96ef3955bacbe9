#include "sys/socket_owner.hpp"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include "sys/unique_fd.hpp"

namespace oarbank {
namespace {

struct DiagRequest {
  nlmsghdr header;
  inet_diag_req_v2 body;
};

// The address and port of one end, as inet_diag's id spells them (network order).
void put_end(const sockaddr_storage& end, __be16& port, __be32 (&address)[4]) {
  if (end.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(end);
    port = v4.sin_port;
    std::memcpy(address, &v4.sin_addr, sizeof v4.sin_addr);
  } else {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(end);
    port = v6.sin6_port;
    std::memcpy(address, &v6.sin6_addr, sizeof v6.sin6_addr);
  }
}

// Sends `request` on a new NETLINK_SOCK_DIAG socket and hands each answer to `visit` until it
// returns true (found) or the kernel says it is done. sock_diag answers unprivileged callers.
std::optional<uid_t> ask(DiagRequest request,
                         const std::function<bool(const inet_diag_msg&)>& visit) {
  UniqueFd diag(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!diag.valid()) return std::nullopt;
  request.header.nlmsg_len = sizeof request;
  request.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  request.body.sdiag_protocol = IPPROTO_TCP;
  if (::send(diag.get(), &request, sizeof request, 0) != static_cast<ssize_t>(sizeof request)) {
    return std::nullopt;
  }
  alignas(nlmsghdr) char buffer[16384];
  for (;;) {
    const ssize_t got = ::recv(diag.get(), buffer, sizeof buffer, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    auto remaining = static_cast<unsigned>(got);
    for (auto* message = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(message, remaining);
         message = NLMSG_NEXT(message, remaining)) {
      if (message->nlmsg_type == NLMSG_DONE) {
        errno = ENOENT;
        return std::nullopt;
      }
      if (message->nlmsg_type == NLMSG_ERROR) {
        const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(message));
        errno = error->error != 0 ? -error->error : ENOENT;
        return std::nullopt;
      }
      if (message->nlmsg_type != SOCK_DIAG_BY_FAMILY) continue;
      const auto* found = static_cast<const inet_diag_msg*>(NLMSG_DATA(message));
      if (visit(*found)) return found->idiag_uid;
    }
    // An exact lookup answers with one message and no NLMSG_DONE.
    if ((request.header.nlmsg_flags & NLM_F_DUMP) == 0) {
      errno = ENOENT;
      return std::nullopt;
    }
  }
}

}  // namespace

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
  return ask(request, [](const inet_diag_msg&) { return true; });
}

std::optional<uid_t> tcp_listener_owner(const sockaddr_storage& address) {
  DiagRequest request{};
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request.body.sdiag_family = static_cast<__u8>(address.ss_family);
  request.body.idiag_states = 1U << TCP_LISTEN;
  __be16 port = 0;
  __be32 wanted[4] = {};
  put_end(address, port, wanted);
  const std::size_t length = address.ss_family == AF_INET ? 4 : 16;
  return ask(request, [&](const inet_diag_msg& found) {
    if (found.id.idiag_sport != port) return false;
    static const __be32 any[4] = {};
    return std::memcmp(found.id.idiag_src, wanted, length) == 0 ||
           std::memcmp(found.id.idiag_src, any, length) == 0;
  });
}

}  // namespace oarbank
