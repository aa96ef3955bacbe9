#include "proxy/proxy_server.hpp"

#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <cerrno>
#include <csignal>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <system_error>

#include "proxy/http_refusal.hpp"
#include "proxy/server_state.hpp"
#include "proxy/session.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank::proxy {
namespace {

// When accept fails for lack of descriptors or memory, wait this long before trying again
// (retrying at once would spin).
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);
// Attack review: each connection costs this thread (the supervisor's, under sandbox-run: outside
// the module's cgroup and its cpu.max) an accept, a parse, a decision and a log line, and a
// refusal is answered at once, so a module could open connections in a loop and have the proxy
// work, and write its log, flat out. At most kAcceptsPerWindow connections of one listener (one
// module) are taken per kAcceptWindow; the next wait in the listen backlog (about 2,000 a second,
// far beyond what tunnels to remote hosts need).
constexpr auto kAcceptWindow = std::chrono::milliseconds(100);
constexpr unsigned kAcceptsPerWindow = 200;

void validate(const ProxySettings& s) {
  using std::chrono::milliseconds;
  if (s.header_read_timeout <= milliseconds(0) || s.dns_timeout <= milliseconds(0) ||
      s.connect_timeout <= milliseconds(0) || s.idle_timeout <= milliseconds(0)) {
    throw std::invalid_argument("proxy timeouts must be positive");
  }
  if (s.max_tunnels_per_module == 0 || s.max_tunnels_total == 0) {
    throw std::invalid_argument("proxy tunnel limits must be positive");
  }
  if (s.max_header_bytes < 1024 || s.max_header_bytes > (1u << 20)) {
    throw std::invalid_argument("proxy max_header_bytes must be from 1 KiB to 1 MiB");
  }
}

int socket_option(int fd, int level, int name) {
  int value = 0;
  socklen_t length = sizeof value;
  if (getsockopt(fd, level, name, &value, &length) != 0) return -1;
  return value;
}

}  // namespace

struct ProxyServer::Impl {
  struct Listener {
    Listener(asio::io_context& io, std::shared_ptr<ModuleState> state)
        : module(std::move(state)), acceptor(io), retry(io) {}
    std::shared_ptr<ModuleState> module;
    asio::ip::tcp::acceptor acceptor;
    asio::steady_timer retry;
    // The client's address, filled in by accept(2) itself (no getpeername per connection).
    asio::ip::tcp::endpoint peer;
    bool closed = false;
    // The pace of accepts (kAcceptsPerWindow per kAcceptWindow).
    std::chrono::steady_clock::time_point window_start{};
    unsigned accepted = 0;
  };

  Impl(ProxySettings settings, std::vector<IpRange> exemptions, int stop_fd)
      : state(io, std::move(settings), std::move(exemptions)), stop_watch(io, stop_fd) {
    state.log.on_counted([this] { arm_repeats(); });
  }

  // Repeated refusals (proxy_log.hpp): their count is written once its second is over, by
  // this timer, armed while refusals are remembered (not a wakeup a second for nothing).
  void arm_repeats() {
    if (repeats_armed || state.stopping) return;
    repeats_armed = true;
    repeats_timer.expires_after(RefusalRepeats::kWindow);
    repeats_timer.async_wait([this](const std::error_code& ec) {
      repeats_armed = false;
      if (ec || state.stopping) return;
      if (state.log.write_due()) arm_repeats();
    });
  }

  void watch_stop() {
    stop_watch.async_wait(asio::posix::stream_descriptor::wait_read,
                          [this](const std::error_code& ec) {
                            if (ec) return;
                            shut_down();
                          });
  }

  void accept(const std::shared_ptr<Listener>& listener) {
    listener->acceptor.async_accept(
        listener->peer, [this, listener](const std::error_code& ec, asio::ip::tcp::socket socket) {
          if (listener->closed || state.stopping) return;
          if (ec) {
            if (ec == asio::error::operation_aborted) return;
            // EMFILE, ENFILE, ENOBUFS, ENOMEM, or a connection aborted before accept: try again.
            listener->retry.expires_after(kAcceptRetry);
            listener->retry.async_wait([this, listener](const std::error_code& error) {
              if (!error && !listener->closed && !state.stopping) accept(listener);
            });
            return;
          }
          admit(listener->module, std::move(socket), listener->peer);
          const auto now = std::chrono::steady_clock::now();
          if (now - listener->window_start >= kAcceptWindow) {
            listener->window_start = now;
            listener->accepted = 0;
          }
          if (++listener->accepted >= kAcceptsPerWindow) {
            listener->retry.expires_at(listener->window_start + kAcceptWindow);
            listener->retry.async_wait([this, listener](const std::error_code& error) {
              if (!error && !listener->closed && !state.stopping) accept(listener);
            });
            return;
          }
          accept(listener);
        });
  }

  void admit(const std::shared_ptr<ModuleState>& module, asio::ip::tcp::socket socket,
             const asio::ip::tcp::endpoint& peer) {
    if (module->peer_check) {
      if (std::string why = module->peer_check(socket.native_handle()); !why.empty()) {
        refuse_now(*module, socket, peer, 403, why);
        return;
      }
    }
    const bool module_full = module->active >= state.settings.max_tunnels_per_module;
    const bool all_full = state.active_total >= state.settings.max_tunnels_total;
    if (!module_full && !all_full) {
      std::make_shared<Session>(state, module, std::move(socket), peer)->start();
      return;
    }
    // Over a limit: answer at once and close, without reading or allocating for it.
    refuse_now(*module, socket, peer, 503,
               module_full ? "too many concurrent connections for this module (" +
                                 std::to_string(state.settings.max_tunnels_per_module) +
                                 ", the node's proxy_max_tunnels_per_module)"
                           : "too many concurrent connections in all (" +
                                 std::to_string(state.settings.max_tunnels_total) +
                                 ", the node's proxy_max_tunnels_total)");
  }

  // Answers `status` at once and closes, without reading the request; logged.
  void refuse_now(const ModuleState& module, asio::ip::tcp::socket& socket,
                  const asio::ip::tcp::endpoint& peer, int status, const std::string& reason) {
    DecisionRecord record;
    record.module = module.id;
    record.client = endpoint_text(peer);
    std::error_code ec;
    record.status = status;
    record.reason = reason;
    state.log.decision(record);
    const std::string response = refusal_response(status, record.reason);
    socket.non_blocking(true, ec);
    socket.write_some(asio::buffer(response), ec);  // a fresh socket's buffer takes it whole
    socket.shutdown(asio::socket_base::shutdown_send, ec);
    socket.close(ec);
  }

  void end_sessions(const ModuleState* only, const std::string& outcome) {
    std::vector<std::shared_ptr<Session>> doomed;
    for (Session* session : state.sessions) {
      if (!only || &session->module() == only) doomed.push_back(session->shared_from_this());
    }
    for (auto& session : doomed) session->abort(outcome);
  }

  void close_listener(Listener& listener) {
    listener.closed = true;
    std::error_code ignored;
    listener.acceptor.close(ignored);
    listener.retry.cancel();
  }

  void shut_down() {
    if (state.stopping) return;
    state.stopping = true;
    {
      std::lock_guard lock(mutex);
      stopped = true;
    }
    for (auto& [id, listener] : listeners) close_listener(*listener);
    listeners.clear();
    end_sessions(nullptr, "stopped");
    state.resolver->shutdown();
    stop_watch.cancel();
    repeats_timer.cancel();  // the counts still open are written when run() ends
  }

  asio::io_context io{1};
  ServerState state;
  asio::posix::stream_descriptor stop_watch;
  asio::steady_timer repeats_timer{io};
  bool repeats_armed = false;
  std::map<std::string, std::shared_ptr<Listener>> listeners;  // the loop's thread only

  std::mutex mutex;  // guards what add_module and remove_module check from other threads
  std::set<std::string> module_ids;
  bool stopped = false;
};

ProxyServer::ProxyServer(ProxySettings settings)
    : ProxyServer(std::move(settings), TestingOnlyExemptions{}) {}

ProxyServer::ProxyServer(ProxySettings settings, TestingOnlyExemptions exemptions) {
  validate(settings);
  UniqueFd stop_fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop_fd.valid()) throw std::system_error(errno, std::generic_category(), "eventfd");
  stop_fd_ = stop_fd.get();
  impl_ = std::make_unique<Impl>(std::move(settings), std::move(exemptions.permitted_ranges),
                                 stop_fd.get());
  impl_->state.relay_tunnels_by_copy = exemptions.relay_tunnels_by_copy;
  stop_fd.release();  // the stream_descriptor owns it now
  impl_->watch_stop();
}

ProxyServer::~ProxyServer() {
  impl_->shut_down();
  // Handlers still queued hold sessions whose sockets are closed; destroying the io_context
  // destroys them.
}

void ProxyServer::add_module(const std::string& module_id, std::vector<EgressDestination> allowlist,
                             int listening_fd, PeerCheck peer_check) {
  UniqueFd fd(listening_fd);
  if (module_id.empty()) throw std::invalid_argument("a module id is required");
  if (!fd.valid() || socket_option(fd.get(), SOL_SOCKET, SO_TYPE) != SOCK_STREAM ||
      socket_option(fd.get(), SOL_SOCKET, SO_ACCEPTCONN) != 1) {
    throw std::invalid_argument("module " + module_id + ": not a listening TCP socket");
  }
  const int family = socket_option(fd.get(), SOL_SOCKET, SO_DOMAIN);
  if (family != AF_INET && family != AF_INET6) {
    throw std::invalid_argument("module " + module_id + ": not an IPv4 or IPv6 socket");
  }
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->stopped) throw std::logic_error("the proxy was stopped");
    if (!impl_->module_ids.insert(module_id).second) {
      throw std::invalid_argument("module " + module_id + " already has a listener");
    }
  }
  auto module = std::make_shared<ModuleState>();
  module->id = module_id;
  module->allowlist = std::move(allowlist);
  module->peer_check = std::move(peer_check);
  Impl* impl = impl_.get();
  asio::post(impl->io, [impl, module, family, fd = std::move(fd)]() mutable {
    if (impl->state.stopping) return;  // fd closes here
    auto listener = std::make_shared<Impl::Listener>(impl->io, module);
    std::error_code ec;
    listener->acceptor.assign(family == AF_INET ? asio::ip::tcp::v4() : asio::ip::tcp::v6(),
                              fd.get(), ec);
    if (ec) return;  // validated above; fd closes here
    fd.release();
    listener->acceptor.non_blocking(true, ec);
    impl->listeners[module->id] = listener;
    impl->accept(listener);
  });
}

void ProxyServer::remove_module(const std::string& module_id) {
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->module_ids.erase(module_id) == 0) return;
  }
  Impl* impl = impl_.get();
  asio::post(impl->io, [impl, module_id] {
    auto it = impl->listeners.find(module_id);
    if (it == impl->listeners.end()) return;
    const std::shared_ptr<Impl::Listener> listener = it->second;
    impl->listeners.erase(it);
    impl->close_listener(*listener);
    impl->end_sessions(listener->module.get(), "module removed");
  });
}

void ProxyServer::run() {
  // splice(2) into a socket whose peer has gone raises SIGPIPE (splice has no MSG_NOSIGNAL),
  // and it is sent to this thread: blocked while the loop runs, and any pending one taken
  // before the mask is restored. The proxy does not rely on its host's disposition: the
  // standalone egress-proxy keeps SIGPIPE's default (sandbox-run ignores it for itself and
  // gives its launcher the caller's: supervise/spawn.hpp).
  sigset_t pipe_only;
  sigset_t previous;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &previous);
  impl_->io.run();
  // Repeated refusals still counted (proxy_log.hpp): written now, from this thread.
  try {
    impl_->state.log.flush();
  } catch (...) {  // a sink that failed: those counts are lost, the proxy still stops
  }
  const timespec no_wait{};
  while (sigtimedwait(&pipe_only, nullptr, &no_wait) == SIGPIPE) {
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

void ProxyServer::stop() noexcept {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = ::write(stop_fd_, &one, sizeof one);
}

}  // namespace oarbank::proxy
