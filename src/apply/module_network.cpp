#include "apply/module_network.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "plan/launch_steps.hpp"
#include "sys/error.hpp"

namespace oarbank {
namespace {

[[noreturn]] void network_failed(const std::string& what, int err) {
  throw step_error(LaunchStep::Network, what, err);
}

}  // namespace

// A fresh namespace's loopback is down: without it nothing, the proxy included, is reachable.
void bring_loopback_up() {
  UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) network_failed("socket for SIOCSIFFLAGS", errno);
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(sock.get(), SIOCGIFFLAGS, &request) != 0) network_failed("SIOCGIFFLAGS lo", errno);
  request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
  if (::ioctl(sock.get(), SIOCSIFFLAGS, &request) != 0) network_failed("SIOCSIFFLAGS lo up", errno);
}

socklen_t socket_address(const std::string& host, std::uint16_t port, sockaddr_storage& address) {
  address = sockaddr_storage{};
  if (host.find(':') != std::string::npos) {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) != 1)
      network_failed("address " + host, EINVAL);
    return sizeof *v6;
  }
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
  v4->sin_family = AF_INET;
  v4->sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) != 1)
    network_failed("address " + host, EINVAL);
  return sizeof *v4;
}

UniqueFd listen_on(const std::string& host, std::uint16_t port) {
  sockaddr_storage address{};
  const socklen_t length = socket_address(host, port, address);
  const int family = address.ss_family;
  UniqueFd sock(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!sock.valid()) network_failed("socket", errno);
  int one = 1;
  ::setsockopt(sock.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(sock.get(), reinterpret_cast<sockaddr*>(&address), length) != 0) {
    network_failed("bind " + host + ":" + std::to_string(port) + " (the proxy's port)", errno);
  }
  if (::listen(sock.get(), SOMAXCONN) != 0) network_failed("listen", errno);
  return sock;
}

namespace {

// The namespace is per thread: this thread enters the new one (or `made`, one made ahead) for
// as long as it takes to make what is made there (a socket stays in the namespace it was made
// in), then comes back.
ModuleNetwork make_network(UniqueFd made, const std::string* host, std::uint16_t port,
                           bool loopback_up) {
  UniqueFd own(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!own.valid()) network_failed("open /proc/thread-self/ns/net", errno);
  if (made.valid() ? ::setns(made.get(), CLONE_NEWNET) != 0 : ::unshare(CLONE_NEWNET) != 0) {
    network_failed(made.valid() ? "setns(a namespace made ahead)" : "unshare(CLONE_NEWNET)", errno);
  }
  ModuleNetwork network;
  try {
    network.netns = made.valid()
                        ? std::move(made)
                        : UniqueFd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!network.netns.valid()) network_failed("open the new namespace", errno);
    if (loopback_up) bring_loopback_up();
    if (host != nullptr) network.listener = listen_on(*host, port);
  } catch (...) {
    ::setns(own.get(), CLONE_NEWNET);
    throw;
  }
  if (::setns(own.get(), CLONE_NEWNET) != 0) {
    // Staying in the module's namespace would cut the proxy off from the network: no way on.
    network_failed("setns back to the node's namespace", errno);
  }
  return network;
}

}  // namespace

ModuleNetwork make_module_network(const std::string& host, std::uint16_t port) {
  return make_network(UniqueFd(), &host, port, true);
}

ModuleNetwork module_network_in(UniqueFd netns, const std::string& host, std::uint16_t port) {
  return make_network(std::move(netns), &host, port, false);
}

ModuleNetwork make_loopback_network(bool loopback_up) {
  return make_network(UniqueFd(), nullptr, 0, loopback_up);
}

std::uint16_t listening_port(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    network_failed("getsockname (the proxy's port)", errno);
  }
  const in_port_t port = address.ss_family == AF_INET6
                             ? reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port
                             : reinterpret_cast<const sockaddr_in*>(&address)->sin_port;
  return ntohs(port);
}

int join_network_namespace(int netns_fd) {
  return ::setns(netns_fd, CLONE_NEWNET) == 0 ? 0 : errno;
}

}  // namespace oarbank
