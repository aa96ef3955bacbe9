// Who owns the far end of a connection and the listeners at an address (sys/socket_owner.hpp):
// what the egress relay asks before it serves a proxy (session 16's and 17's reviews), by
// sock_diag and by /proc/self/net/tcp (kernels without inet_diag), on real sockets here.
#include "sys/socket_owner.hpp"

#include <arpa/inet.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <optional>

namespace oarbank {
namespace {

sockaddr_storage loopback(std::uint16_t port) {
  sockaddr_storage address{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
  v4->sin_family = AF_INET;
  v4->sin_port = htons(port);
  v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

// A listener on 127.0.0.1 at a free port (its fd and port), TCP_DEFER_ACCEPT when asked.
std::pair<int, std::uint16_t> listen_loopback(bool defer = false) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int seconds = 5;
  if (defer) ::setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &seconds, sizeof seconds);
  sockaddr_storage address = loopback(0);
  socklen_t length = sizeof(sockaddr_in);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 || ::listen(fd, 8) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return {-1, 0};
  }
  return {fd, ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port)};
}

int connect_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_storage address = loopback(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(sockaddr_in)) != 0) return -1;
  return fd;
}

using PeerOwner = std::function<std::optional<uid_t>(int)>;
using ListenerOwner = std::function<std::optional<uid_t>(const sockaddr_storage&)>;

// Asks until the answer is no longer "not accepted yet" (EAGAIN), a second at most.
std::optional<uid_t> settled(const PeerOwner& peer_owner, int fd) {
  for (int round = 0; round < 500; ++round) {
    errno = 0;
    auto owner = peer_owner(fd);
    if (owner || errno != EAGAIN) return owner;
    ::usleep(2000);
  }
  return std::nullopt;
}

void expect_both_answers(const PeerOwner& peer_owner, const ListenerOwner& listener_owner) {
  const auto [listener, port] = listen_loopback();
  ASSERT_GE(listener, 0);
  // This process's own: its uid.
  EXPECT_EQ(listener_owner(loopback(port)), ::geteuid());
  const int client = connect_loopback(port);
  ASSERT_GE(client, 0);
  // Still in the listener's queue: no answer yet (the kernel reports root, or the listener's
  // owner, for a socket nobody accepted: session 17's review of Linux 6.12).
  errno = 0;
  EXPECT_EQ(peer_owner(client), std::nullopt);
  EXPECT_EQ(errno, EAGAIN);
  const int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(accepted, 0);
  EXPECT_EQ(settled(peer_owner, client), ::geteuid());
  ::close(accepted);
  ::close(client);
  ::close(listener);
  // Nothing listens there now.
  errno = 0;
  EXPECT_EQ(listener_owner(loopback(port)), std::nullopt);
  EXPECT_EQ(errno, ENOENT);
  // A listener that defers its accept: the far end stays a request socket, never an answer.
  const auto [deferring, deferred_port] = listen_loopback(true);
  ASSERT_GE(deferring, 0);
  const int waiting = connect_loopback(deferred_port);
  ASSERT_GE(waiting, 0);
  errno = 0;
  EXPECT_EQ(peer_owner(waiting), std::nullopt);
  EXPECT_EQ(errno, EAGAIN);
  ::close(waiting);
  ::close(deferring);
}

TEST(SocketOwner, SockDiagNamesThePeersAndTheListenersOwner) {
  expect_both_answers(tcp_peer_owner, tcp_listener_owner);
}

TEST(SocketOwner, ProcNetTcpNamesThePeersAndTheListenersOwner) {
  expect_both_answers(tcp_peer_owner_from_proc, tcp_listener_owner_from_proc);
}

// Another user's listener, also dual-stack on [::] for an IPv4 address: named by both routes.
TEST(SocketOwner, AnotherUsersListenerIsNamedByBothRoutesAndADualStackOneToo) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to listen as another user";
  for (const bool dual_stack : {false, true}) {
    SCOPED_TRACE(dual_stack ? "[::]" : "127.0.0.1");
    const auto [probe, port] = listen_loopback();
    ::close(probe);
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    if (child == 0) {
      if (::setgroups(0, nullptr) != 0 || ::setresgid(65533, 65533, 65533) != 0 ||
          ::setresuid(65533, 65533, 65533) != 0) {
        ::_exit(1);
      }
      const int fd = ::socket(dual_stack ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
      int zero = 0;
      sockaddr_storage address = loopback(port);
      socklen_t length = sizeof(sockaddr_in);
      if (dual_stack) {
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        address = {};
        auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        length = sizeof *v6;
      }
      if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 || ::listen(fd, 8) != 0)
        ::_exit(1);
      [[maybe_unused]] auto n = ::write(ready[1], "r", 1);
      for (;;) {
        if (::accept(fd, nullptr, nullptr) < 0) ::_exit(1);  // held open: what a proxy does
      }
    }
    ::close(ready[1]);
    char byte = 0;
    ASSERT_EQ(::read(ready[0], &byte, 1), 1);
    ::close(ready[0]);
    EXPECT_EQ(tcp_listener_owner(loopback(port)), 65533U);
    EXPECT_EQ(tcp_listener_owner_from_proc(loopback(port)), 65533U);
    const int client = connect_loopback(port);
    EXPECT_GE(client, 0);
    EXPECT_EQ(settled(tcp_peer_owner, client), 65533U);
    EXPECT_EQ(settled(tcp_peer_owner_from_proc, client), 65533U);
    ::close(client);
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
  }
}

}  // namespace
}  // namespace oarbank
