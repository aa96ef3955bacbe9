#include "proxy/local_addresses.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

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

std::set<IpAddress> node_addresses() {
  std::set<IpAddress> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
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

}  // namespace oarbank::proxy
