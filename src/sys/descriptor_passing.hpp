// One descriptor passed over a unix socket with a few bytes that carry it (SCM_RIGHTS): the
// launcher hands its seccomp listener to sandbox-run this way (apply/seccomp_apply.cpp). The
// kernel keeps the descriptor alive in the socket until it is received, whatever the sender
// closes after.
#pragma once

#include <string_view>

namespace oarbank {

// Sends `bytes` (not empty) with `fd` on `socket` (MSG_NOSIGNAL). 0 when every byte went; the
// errno otherwise (EIO for a short send). Async-signal-safe: no allocation.
int send_with_descriptor(int socket, std::string_view bytes, int fd) noexcept;

}  // namespace oarbank
