#include "apply/relay_loop.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <vector>

#include "sys/socket_owner.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {
namespace {

// One direction of a link: from -> pipe -> to.
struct Flow {
  UniqueFd pipe_read;
  UniqueFd pipe_write;
  std::size_t capacity = 0;  // F_GETPIPE_SZ: a pipe may be smaller than the default 64 KiB
  std::size_t in_pipe = 0;
  bool eof = false;   // `from` sent its FIN
  bool done = false;  // the FIN was passed on (or `to` can take nothing more)
};

struct Link {
  UniqueFd client;    // accepted in the module's namespace
  UniqueFd upstream;  // to the proxy, in the node's namespace
  bool connecting = true;
  // Connected, not yet known to reach root's proxy: nothing is passed until it is (session
  // 17's review: the far end names its owner only once accepted).
  bool verifying = false;
  std::chrono::steady_clock::time_point verify_deadline;
  bool failed = false;
  Flow up;    // client -> upstream
  Flow down;  // upstream -> client
};

bool make_pipe(Flow& flow) {
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return false;
  flow.pipe_read.reset(fds[0]);
  flow.pipe_write.reset(fds[1]);
  const int size = ::fcntl(fds[0], F_GETPIPE_SZ);
  flow.capacity = size > 0 ? static_cast<std::size_t>(size) : 4096;
  return true;
}

// Moves what can move without blocking (a bounded number of rounds, so that one busy link
// does not starve the others). False on an error that ends the link (a reset, EPIPE).
bool pump(Flow& flow, int from, int to) {
  constexpr unsigned kSplice = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
  for (int round = 0; round < 16 && !flow.done; ++round) {
    bool progress = false;
    if (!flow.eof && flow.in_pipe < flow.capacity) {
      const ssize_t n = ::splice(from, nullptr, flow.pipe_write.get(), nullptr,
                                 flow.capacity - flow.in_pipe, kSplice);
      if (n > 0) {
        flow.in_pipe += static_cast<std::size_t>(n);
        progress = true;
      } else if (n == 0) {
        flow.eof = true;
        progress = true;
      } else if (errno != EAGAIN && errno != EINTR) {
        return false;
      }
    }
    if (flow.in_pipe > 0) {
      const ssize_t n = ::splice(flow.pipe_read.get(), nullptr, to, nullptr, flow.in_pipe, kSplice);
      if (n > 0) {
        flow.in_pipe -= static_cast<std::size_t>(n);
        progress = true;
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return false;
      }
    }
    if (flow.eof && flow.in_pipe == 0) {
      ::shutdown(to, SHUT_WR);  // half-close, as the module did
      flow.done = true;
    }
    if (!progress) break;
  }
  return true;
}

short flow_events_from(const Flow& flow) {
  return !flow.done && !flow.eof && flow.in_pipe < flow.capacity ? POLLIN : 0;
}
short flow_events_to(const Flow& flow) { return !flow.done && flow.in_pipe > 0 ? POLLOUT : 0; }

// Whether the proxy the relay reached is root's (attack reviews, sessions 16 and 17):
// proxy_listen's port is unprivileged, so another local user could listen there once the
// proxy is gone and be the module's proxy for every destination. Asked of the very connection
// made, once the far end is accepted: its owner is then the accepting process's user.
// Long enough for a loaded proxy to accept; a listener that never does is dropped.
constexpr auto kVerifyWithin = std::chrono::seconds(5);

void start_verifying(Link& link) {
  link.verifying = true;
  link.verify_deadline = std::chrono::steady_clock::now() + kVerifyWithin;
}

// Advances a verifying link: done (root's), failed (another's, closed, out of time), or still
// waiting.
void verify(Link& link) {
  const auto owner = tcp_peer_owner(link.upstream.get());
  if (owner) {
    link.verifying = false;
    link.failed = *owner != 0;
  } else if (errno != EAGAIN || std::chrono::steady_clock::now() >= link.verify_deadline) {
    link.failed = true;
  }
}

void set_no_delay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Accepts what waits on the listener; beyond `max_links` a connection is closed at once.
void accept_waiting(int listener, const RelayTarget& target, std::size_t max_links,
                    std::vector<std::unique_ptr<Link>>& links) {
  for (;;) {
    UniqueFd client(::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!client.valid()) return;  // EAGAIN; or out of descriptors: the next round retries
    if (links.size() >= max_links) continue;
    auto link = std::make_unique<Link>();
    link->upstream.reset(
        ::socket(target.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!link->upstream.valid() || !make_pipe(link->up) || !make_pipe(link->down)) continue;
    const int rc = ::connect(link->upstream.get(),
                             reinterpret_cast<const sockaddr*>(&target.address), target.length);
    if (rc != 0 && errno != EINPROGRESS) continue;  // the proxy is not there: refused, closed
    link->connecting = rc != 0;
    if (!link->connecting) start_verifying(*link);
    set_no_delay(client.get());
    set_no_delay(link->upstream.get());
    link->client = std::move(client);
    links.push_back(std::move(link));
  }
}

}  // namespace

void run_relay(int listener, const RelayTarget& target, int module_pidfd, std::size_t max_links) {
  std::vector<std::unique_ptr<Link>> links;
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({module_pidfd, POLLIN, 0});
    fds.push_back({listener, POLLIN, 0});
    bool any_verifying = false;
    for (const auto& link : links) {
      short client = 0;
      short upstream = 0;
      if (link->connecting) {
        upstream = POLLOUT;
      } else if (link->verifying) {
        any_verifying = true;  // asked again each round, every 2 ms, until it is known
      } else {
        client = static_cast<short>(flow_events_from(link->up) | flow_events_to(link->down));
        upstream = static_cast<short>(flow_events_from(link->down) | flow_events_to(link->up));
      }
      fds.push_back({link->client.get(), client, 0});
      fds.push_back({link->upstream.get(), upstream, 0});
    }
    if (::poll(fds.data(), fds.size(), any_verifying ? 2 : -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) return;  // the module's process is gone: so is the relay
    for (std::size_t i = 0; i < links.size(); ++i) {
      Link& link = *links[i];
      const short client = fds[2 + 2 * i].revents;
      const short upstream = fds[3 + 2 * i].revents;
      if (link.verifying) {
        if (((client | upstream) & (POLLERR | POLLNVAL | POLLHUP)) != 0) {
          link.failed = true;
        } else {
          verify(link);  // its bytes move from the next round on
        }
        continue;
      }
      if (client == 0 && upstream == 0) continue;
      if (((client | upstream) & (POLLERR | POLLNVAL)) != 0) {
        link.failed = true;
        continue;
      }
      if (link.connecting) {
        if (upstream == 0) continue;
        int error = 0;
        socklen_t length = sizeof error;
        if (::getsockopt(link.upstream.get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0 ||
            error != 0) {
          link.failed = true;
          continue;
        }
        link.connecting = false;
        start_verifying(link);
        continue;
      }
      if (!pump(link.up, link.client.get(), link.upstream.get()) ||
          !pump(link.down, link.upstream.get(), link.client.get())) {
        link.failed = true;
        continue;
      }
      // POLLHUP: that socket can take nothing more; what was bound for it is dropped (and
      // poll would report it again and again).
      if ((client & POLLHUP) != 0) link.down.done = true;
      if ((upstream & POLLHUP) != 0) link.up.done = true;
    }
    std::erase_if(links, [](const std::unique_ptr<Link>& link) {
      return link->failed || (link->up.done && link->down.done);
    });
    if ((fds[1].revents & POLLIN) != 0) accept_waiting(listener, target, max_links, links);
  }
}

}  // namespace oarbank
