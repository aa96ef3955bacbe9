#include "proxy/cares_resolver.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <asio/post.hpp>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "proxy/destination_match.hpp"

namespace oarbank::proxy {

struct CaresResolver::Query {
  CaresResolver* owner = nullptr;
  std::uint64_t id = 0;
  Callback done;
  bool finished = false;  // the callback ran (an answer or our own timeout)
  std::unique_ptr<asio::steady_timer> deadline;
};

namespace {

// "IP", "IP:port", "[IPv6]", "[IPv6]:port" -> c-ares' CSV item "IP:port" / "[IPv6]:port".
std::string server_item(const std::string& text) {
  std::string problem;
  auto target = parse_authority(text, 53, problem);
  if (!target || !target->ip) {
    throw std::invalid_argument("DNS server \"" + text +
                                "\": expected an IP address with an optional port" +
                                (problem.empty() ? "" : " (" + problem + ")"));
  }
  return target->authority();
}

}  // namespace

CaresResolver::CaresResolver(asio::io_context& io, const std::vector<std::string>& servers,
                             std::chrono::milliseconds timeout)
    : io_(io), timeout_(timeout), ares_timer_(io) {
  std::string csv;
  for (const auto& server : servers) {
    if (!csv.empty()) csv += ",";
    csv += server_item(server);
  }
  static std::once_flag library_once;
  static int library_status = ARES_SUCCESS;
  std::call_once(library_once, [] { library_status = ares_library_init(ARES_LIB_INIT_ALL); });
  if (library_status != ARES_SUCCESS) {
    throw std::runtime_error(std::string("c-ares: ") + ares_strerror(library_status));
  }
  ares_options options{};
  int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES;
  options.sock_state_cb = &CaresResolver::on_socket_state;
  options.sock_state_cb_data = this;
  // NOSEARCH, NOALIASES: a name means itself. STAYOPEN: the UDP sockets live as long as the
  // channel (shutdown() closes them), instead of a socket per resolution.
  options.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES | ARES_FLAG_STAYOPEN;
  // Two tries inside the overall timeout (our own timer enforces it in any case).
  options.timeout = static_cast<int>(std::max<long long>(100, timeout.count() / 2));
  options.tries = 2;
  char lookups[] = "b";  // DNS only: the named servers, not /etc/hosts
  if (!servers.empty()) {
    mask |= ARES_OPT_LOOKUPS;
    options.lookups = lookups;
  }
  const int status = ares_init_options(&channel_, &options, mask);
  if (status != ARES_SUCCESS)
    throw std::runtime_error(std::string("c-ares: ") + ares_strerror(status));
  if (!csv.empty()) {
    const int set = ares_set_servers_ports_csv(channel_, csv.c_str());
    if (set != ARES_SUCCESS) {
      ares_destroy(channel_);
      channel_ = nullptr;
      throw std::invalid_argument("DNS servers \"" + csv + "\": " + ares_strerror(set));
    }
  }
}

CaresResolver::~CaresResolver() { shutdown(); }

void CaresResolver::shutdown() {
  if (channel_) {
    // ares_destroy answers every pending query (ARES_EDESTRUCTION) and closes the sockets.
    ares_channel channel = channel_;
    channel_ = nullptr;
    ares_destroy(channel);
  }
  for (auto& [fd, watch] : watches_) {
    if (watch.descriptor) watch.descriptor->release();  // c-ares owns and closed the fd
  }
  watches_.clear();
  ares_timer_.cancel();
  for (auto& [id, query] : queries_) {
    if (query->deadline) query->deadline->cancel();
    if (!query->finished) {
      query->finished = true;
      ResolveResult result;
      result.error = "the proxy is shutting down";
      Callback done = std::move(query->done);
      if (done) done(std::move(result));
    }
  }
  queries_.clear();
}

void CaresResolver::resolve(const std::string& name, Callback done) {
  if (!channel_) {
    ResolveResult result;
    result.error = "the proxy is shutting down";
    done(std::move(result));
    return;
  }
  auto owned = std::make_unique<Query>();
  Query* query = owned.get();
  query->owner = this;
  query->id = next_query_++;
  query->done = std::move(done);
  query->deadline = std::make_unique<asio::steady_timer>(io_, timeout_);
  queries_.emplace(query->id, std::move(owned));
  const std::uint64_t id = query->id;
  query->deadline->async_wait([this, id](const std::error_code& ec) {
    if (ec) return;
    auto it = queries_.find(id);
    if (it == queries_.end() || it->second->finished) return;
    ResolveResult result;
    result.status = ResolveResult::Status::Timeout;
    result.error = "no answer in time";
    // The Query stays until c-ares answers (it holds a pointer to it); only the callback runs now.
    finish(*it->second, std::move(result));
  });
  ares_addrinfo_hints hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = ARES_AI_NOSORT;
  ares_getaddrinfo(channel_, name.c_str(), nullptr, &hints, &CaresResolver::on_answer, query);
  schedule_timeout();
}

void CaresResolver::finish(Query& query, ResolveResult result) {
  if (query.finished) return;
  query.finished = true;
  if (query.deadline) query.deadline->cancel();
  Callback done = std::move(query.done);
  try {
    if (done) done(std::move(result));
  } catch (...) {
    // A callback's failure must not unwind through c-ares' C frames.
  }
}

void CaresResolver::on_answer(void* arg, int status, int /*timeouts*/, struct ares_addrinfo* info) {
  auto* query = static_cast<Query*>(arg);
  CaresResolver* self = query->owner;
  ResolveResult result;
  if (status == ARES_SUCCESS && info) {
    result.status = ResolveResult::Status::Ok;
    for (auto* node = info->nodes; node; node = node->ai_next) {
      IpAddress address;
      if (node->ai_family == AF_INET && node->ai_addrlen >= static_cast<int>(sizeof(sockaddr_in))) {
        const auto* sin = reinterpret_cast<const sockaddr_in*>(node->ai_addr);
        std::memcpy(address.bytes.data(), &sin->sin_addr, 4);
      } else if (node->ai_family == AF_INET6 &&
                 node->ai_addrlen >= static_cast<int>(sizeof(sockaddr_in6))) {
        const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(node->ai_addr);
        address.v6 = true;
        std::memcpy(address.bytes.data(), &sin6->sin6_addr, 16);
      } else {
        continue;
      }
      if (std::find(result.addresses.begin(), result.addresses.end(), address) ==
          result.addresses.end()) {
        result.addresses.push_back(address);
      }
    }
  } else if (status == ARES_ENOTFOUND || status == ARES_ENODATA || status == ARES_ENONAME) {
    result.status = ResolveResult::Status::NotFound;
    result.error = ares_strerror(status);
  } else if (status == ARES_ETIMEOUT) {
    result.status = ResolveResult::Status::Timeout;
    result.error = ares_strerror(status);
  } else {
    result.error = ares_strerror(status);
  }
  if (info) ares_freeaddrinfo(info);
  self->finish(*query, std::move(result));
  self->queries_.erase(query->id);
}

void CaresResolver::on_socket_state(void* self, ares_socket_t fd, int readable, int writable) {
  static_cast<CaresResolver*>(self)->socket_state(fd, readable != 0, writable != 0);
}

void CaresResolver::socket_state(int fd, bool readable, bool writable) {
  if (!readable && !writable) {
    // c-ares is about to close fd: stop watching it first, without closing it.
    auto it = watches_.find(fd);
    if (it != watches_.end()) {
      if (it->second.descriptor) it->second.descriptor->release();
      watches_.erase(it);
    }
    return;
  }
  Watch& watch = watches_[fd];
  if (!watch.descriptor) {
    watch.descriptor = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
    watch.generation = next_generation_++;
  }
  watch.want_read = readable;
  watch.want_write = writable;
  if (readable && !watch.read_armed) arm(fd, false);
  if (writable && !watch.write_armed) arm(fd, true);
}

void CaresResolver::arm(int fd, bool write) {
  Watch& watch = watches_.at(fd);
  (write ? watch.write_armed : watch.read_armed) = true;
  const std::uint64_t generation = watch.generation;
  auto on_ready = [this, fd, write, generation](const std::error_code& ec) {
    auto it = watches_.find(fd);
    if (it == watches_.end() || it->second.generation != generation) return;
    (write ? it->second.write_armed : it->second.read_armed) = false;
    if (ec) return;
    process(write ? ARES_SOCKET_BAD : fd, write ? fd : ARES_SOCKET_BAD);
    // c-ares may have closed the socket or changed its interest meanwhile.
    it = watches_.find(fd);
    if (it == watches_.end() || it->second.generation != generation) return;
    const bool wanted = write ? it->second.want_write : it->second.want_read;
    const bool armed = write ? it->second.write_armed : it->second.read_armed;
    if (wanted && !armed) arm(fd, write);
  };
  // Asio registers descriptors edge-triggered, and a wait does not look at the present
  // state: readiness that arrived while no wait was queued (a second datagram c-ares did not
  // read yet, or one the reactor saw between our handler's completion and this re-arm)
  // would never be reported. A zero-timeout poll sees the level.
  pollfd ready{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
  if (::poll(&ready, 1, 0) == 1) {
    asio::post(io_, [on_ready]() { on_ready(std::error_code()); });
    return;
  }
  watch.descriptor->async_wait(write ? asio::posix::stream_descriptor::wait_write
                                     : asio::posix::stream_descriptor::wait_read,
                               std::move(on_ready));
}

void CaresResolver::process(int read_fd, int write_fd) {
  if (!channel_) return;
  ares_process_fd(channel_, read_fd, write_fd);
  schedule_timeout();
}

void CaresResolver::schedule_timeout() {
  if (!channel_) return;
  timeval tv{};
  if (!ares_timeout(channel_, nullptr, &tv)) {
    ares_timer_.cancel();
    return;
  }
  const auto wait = std::chrono::seconds(tv.tv_sec) + std::chrono::microseconds(tv.tv_usec);
  ares_timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(wait));
  ares_timer_.async_wait([this](const std::error_code& ec) {
    if (!ec) process(ARES_SOCKET_BAD, ARES_SOCKET_BAD);
  });
}

}  // namespace oarbank::proxy
