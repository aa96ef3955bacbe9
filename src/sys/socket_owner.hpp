// Which user made the TCP socket at the other end of a connection, or listening at an
// address, as the kernel's sock_diag interface tells anyone (what `ss -e` shows as uid:).
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <optional>

namespace oarbank {

// The user of the process that accepted the far end of `connected` (a TCP socket whose
// connect completed), in this process's network namespace: the one that reads what is sent.
// nullopt with errno set: EAGAIN, not accepted yet (still in the listener's queue, or a request
// socket, which TCP_DEFER_ACCEPT keeps until data comes: the kernel reports either as root's,
// or as the listener's, so neither is an answer; ask again); ECONNRESET, closed before it could
// be seen; ENOENT, none; or sock_diag's or /proc's error.
std::optional<uid_t> tcp_peer_owner(int connected);

// The owner of the TCP listeners that take connections to `address` in this process's network
// namespace: those bound to it or to the wildcard, of its family and, for an IPv4 address,
// IPv6 ones that may take it too (dual-stack [::], or ::ffff:a.b.c.d). When several do, the
// first that is not root's. nullopt: none listens (errno ENOENT); the kernel has no inet_diag
// (EAFNOSUPPORT: built without CONFIG_INET_DIAG, or its module cannot be loaded); or another
// errno from sock_diag.
std::optional<uid_t> tcp_listener_owner(const sockaddr_storage& address);

// The same two answers read from /proc/self/net/tcp and tcp6, which the two above use where
// sock_diag has no inet_diag (a module that cannot be loaded). Exposed for the unit tests.
std::optional<uid_t> tcp_peer_owner_from_proc(int connected);
std::optional<uid_t> tcp_listener_owner_from_proc(const sockaddr_storage& address);

}  // namespace oarbank
