// Descriptors passed over a unix socket with a few bytes that carry them (SCM_RIGHTS): the
// launcher hands its seccomp listener to sandbox-run this way (apply/seccomp_apply.cpp), and
// the namespace stock a module's namespaces (supervise/namespace_stock.hpp). The kernel keeps
// a descriptor alive in the socket until it is received, whatever the sender closes after.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "sys/unique_fd.hpp"

namespace oarbank {

// The most descriptors one message carries here.
inline constexpr std::size_t kMaxPassedDescriptors = 8;

// Sends `bytes` (not empty) with `fds` (at most kMaxPassedDescriptors; none: a plain send) on
// `socket` (MSG_NOSIGNAL, and `flags`), to `to` when not null (an unconnected datagram
// socket). 0 when every byte went; the errno otherwise (EIO for a short send, E2BIG for too
// many descriptors). Async-signal-safe: no allocation.
int send_with_descriptors(int socket, std::string_view bytes, std::span<const int> fds,
                          const sockaddr_un* to = nullptr, int flags = 0) noexcept;
inline int send_with_descriptor(int socket, std::string_view bytes, int fd) noexcept {
  return send_with_descriptors(socket, bytes, std::span<const int>(&fd, 1));
}

// One recvmsg of at most `size` bytes into `buffer` (`flags`: recvmsg's, e.g. MSG_DONTWAIT);
// every descriptor that came with them is appended to `fds`, owned and close-on-exec
// (MSG_CMSG_CLOEXEC), so that none leaks whatever the caller keeps. `sender`, when not null,
// gets the credentials the kernel put on the message (SO_PASSCRED on the socket), else is
// left with pid 0 and uid and gid -1. Returns recvmsg's result (-1 with errno).
ssize_t receive_with_descriptors(int socket, char* buffer, std::size_t size,
                                 std::vector<UniqueFd>& fds, int flags = 0,
                                 ucred* sender = nullptr);

}  // namespace oarbank
