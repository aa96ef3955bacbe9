// Which user made the TCP socket at the other end of a connection, or listening at an
// address, as the kernel's sock_diag interface tells anyone (what `ss -e` shows as uid:).
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <optional>

namespace oarbank {

// The uid that made the socket `connected` (a TCP socket whose connect completed) is
// connected to, in this process's network namespace: the accepted (or still queued) socket at
// the far end inherits its listener's owner. nullopt with errno set when the kernel has none
// (ENOENT: the far end is gone) or sock_diag cannot be asked.
std::optional<uid_t> tcp_peer_owner(int connected);

// The uid owning the TCP listener bound to `address` (or to the wildcard of its family on the
// same port), in this process's network namespace. nullopt: none listens (errno ENOENT), or
// sock_diag cannot be asked (errno).
std::optional<uid_t> tcp_listener_owner(const sockaddr_storage& address);

}  // namespace oarbank
