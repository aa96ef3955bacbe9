// The egress relay's loop (apply/egress_relay.cpp starts it): bytes between the connections a
// module makes to the proxy's address inside its own network namespace and the real proxy in
// the node's namespace. One thread, poll(2), splice(2) through a pipe per direction: the bytes
// never enter this process's memory, and it parses nothing the module sends.
#pragma once

#include <sys/socket.h>

#include <cstddef>

namespace oarbank {

struct RelayTarget {
  sockaddr_storage address{};  // the proxy, in this process's (the node's) namespace
  socklen_t length = 0;
};

// Accepts on `listener` (a listening TCP socket made in the module's namespace, non-blocking)
// and joins each connection to a new one to `target`, at most `max_links` at once (beyond
// them a connection is closed at once). Returns when `module_pidfd` becomes readable: the
// module's process has exited; every connection is closed then.
void run_relay(int listener, const RelayTarget& target, int module_pidfd, std::size_t max_links);

}  // namespace oarbank
