#include "proxy/local_addresses.hpp"

#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sys/error.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank::proxy {
namespace {

void add(const sockaddr* sa, std::set<IpAddress>& out) {
  if (!sa) return;
  IpAddress address;
  if (sa->sa_family == AF_INET) {
    std::memcpy(address.bytes.data(), &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, 4);
  } else if (sa->sa_family == AF_INET6) {
    address.v6 = true;
    std::memcpy(address.bytes.data(), &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, 16);
  } else {
    return;
  }
  out.insert(address);
}

}  // namespace

std::optional<std::set<IpAddress>> node_addresses() {
  std::set<IpAddress> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return std::nullopt;
  for (ifaddrs* entry = list; entry; entry = entry->ifa_next) {
    add(entry->ifa_addr, out);
    if ((entry->ifa_flags & IFF_BROADCAST) && entry->ifa_addr &&
        entry->ifa_addr->sa_family == AF_INET) {
      add(entry->ifa_broadaddr, out);
    }
  }
  freeifaddrs(list);
  return out;
}

std::optional<std::string> routed_to_this_node(const IpAddress& address) {
  // An IPv4-mapped address is connected to over IPv4: ask for its IPv4 route.
  static const IpRange kMapped = *parse_ip_range("::ffff:0:0/96");
  const bool mapped = address.v6 && kMapped.contains(address);
  const bool v6 = address.v6 && !mapped;
  const std::size_t length = v6 ? 16 : 4;
  const std::uint8_t* bytes = address.bytes.data() + (mapped ? 12 : 0);
  struct {
    nlmsghdr header;
    rtmsg route;
    char attributes[64];
  } request{};
  request.header.nlmsg_len = NLMSG_LENGTH(sizeof(rtmsg));
  request.header.nlmsg_type = RTM_GETROUTE;
  request.header.nlmsg_flags = NLM_F_REQUEST;
  request.header.nlmsg_seq = 1;
  request.route.rtm_family = static_cast<unsigned char>(v6 ? AF_INET6 : AF_INET);
  request.route.rtm_dst_len = static_cast<unsigned char>(length * 8);
  auto* attribute = reinterpret_cast<rtattr*>(reinterpret_cast<char*>(&request) +
                                              NLMSG_ALIGN(request.header.nlmsg_len));
  attribute->rta_type = RTA_DST;
  attribute->rta_len = static_cast<unsigned short>(RTA_LENGTH(length));
  std::memcpy(RTA_DATA(attribute), bytes, length);
  request.header.nlmsg_len =
      static_cast<__u32>(NLMSG_ALIGN(request.header.nlmsg_len) + RTA_LENGTH(length));

  const auto unanswered = [&](const std::string& what) {
    return address.to_string() + " is refused: the node's routes could not be asked (" + what + ")";
  };
  UniqueFd socket(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!socket.valid()) return unanswered("socket: " + errno_text(errno));
  if (::send(socket.get(), &request, request.header.nlmsg_len, 0) < 0) {
    return unanswered("send: " + errno_text(errno));
  }
  alignas(nlmsghdr) char reply[8192];
  const ssize_t n = ::recv(socket.get(), reply, sizeof reply, 0);
  if (n < 0) return unanswered("recv: " + errno_text(errno));
  const auto* answer = reinterpret_cast<const nlmsghdr*>(reply);
  if (!NLMSG_OK(answer, static_cast<unsigned>(n))) return unanswered("a short answer");
  if (answer->nlmsg_type == NLMSG_ERROR) {
    const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(answer));
    // No route (ENETUNREACH, EHOSTUNREACH...): connecting fails by itself, with its own line.
    if (error->error != 0) return std::nullopt;
    return unanswered("no route in the answer");
  }
  if (answer->nlmsg_type != RTM_NEWROUTE) return unanswered("an unexpected answer");
  const auto* route = static_cast<const rtmsg*>(NLMSG_DATA(answer));
  const char* kind = nullptr;
  switch (route->rtm_type) {
    case RTN_LOCAL:
      kind = "a local route";
      break;
    case RTN_BROADCAST:
      kind = "a broadcast route";
      break;
    case RTN_ANYCAST:
      kind = "an anycast route of its own";
      break;
    case RTN_MULTICAST:
      kind = "a multicast route";
      break;
    default:
      return std::nullopt;
  }
  return address.to_string() + " is refused: the node would deliver it to itself (" + kind +
         ": an address of this node)";
}

}  // namespace oarbank::proxy
