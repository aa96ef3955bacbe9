#include "proxy/session.hpp"

#include <algorithm>
#include <asio/write.hpp>
#include <system_error>

#include "proxy/http_refusal.hpp"

namespace oarbank::proxy {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

std::string endpoint_text(const asio::ip::tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  const std::string host = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return host + ":" + std::to_string(endpoint.port());
}

Session::Session(ServerState& server, std::shared_ptr<ModuleState> module,
                 asio::ip::tcp::socket client, const asio::ip::tcp::endpoint& peer)
    : server_(server),
      module_(std::move(module)),
      client_(std::move(client)),
      upstream_(server.io),
      timer_(server.io),
      started_(Clock::now()),
      last_activity_(started_),
      up_pump_(*this, tunnel_shared_, client_, upstream_, up_buf_, bytes_up_, "client", "upstream"),
      down_pump_(*this, tunnel_shared_, upstream_, client_, down_buf_, bytes_down_, "upstream",
                 "client") {
  tunnel_shared_.large_pipes = &server_.large_pipes;
  tunnel_shared_.by_copy = server_.relay_tunnels_by_copy;
  ++module_->active;
  ++server_.active_total;
  server_.sessions.insert(this);
  client_text_ = endpoint_text(peer);
  up_buf_.resize(std::max(kRelayBufferBytes, server_.settings.max_header_bytes));
}

Session::~Session() {
  if (phase_ != Phase::Done) finish("closed", false);
}

void Session::start() {
  std::error_code ignored;
  client_.set_option(asio::ip::tcp::no_delay(true), ignored);
  bound_socket_buffers(client_.native_handle());
  arm_head_timer();
  read_head();
}

void Session::close_socket(asio::ip::tcp::socket& socket, bool reset) {
  if (!socket.is_open()) return;
  std::error_code ignored;
  if (reset) socket.set_option(asio::socket_base::linger(true, 0), ignored);
  socket.close(ignored);
}

void Session::abort(const std::string& outcome) {
  if (phase_ != Phase::Done) finish(outcome, false);
}

// --- Relaying -----------------------------------------------------------------------------

void Session::start_tunnel() {
  asio::async_write(client_, asio::buffer(kTunnelEstablished),
                    [self = shared_from_this()](const std::error_code& ec, std::size_t) {
                      if (self->phase_ != Phase::Relaying) return;
                      if (ec) {
                        self->finish("reset", true, 0, "client: " + ec.message());
                        return;
                      }
                      self->down_pump_.start();
                    });
  // Bytes the client sent right after the head (a TLS ClientHello) belong to the tunnel.
  const std::size_t extra = received_ - head_bytes_;
  if (extra == 0) {
    up_pump_.start();
    return;
  }
  asio::async_write(upstream_, asio::buffer(up_buf_.data() + head_bytes_, extra),
                    [self = shared_from_this()](const std::error_code& ec, std::size_t n) {
                      if (self->phase_ != Phase::Relaying) return;
                      if (ec) {
                        self->finish("reset", true, 0, "upstream: " + ec.message());
                        return;
                      }
                      self->bytes_up_ += n;
                      self->up_pump_.start();
                    });
}

void Session::direction_ended() {
  if (up_pump_.ended() && down_pump_.ended()) finish("closed", false);
}

void Session::direction_failed(const std::string& reason) { finish("reset", true, 0, reason); }

void Session::arm_idle_timer() {
  timer_.expires_at(last_activity_ + server_.settings.idle_timeout);
  timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (ec || self->phase_ != Phase::Relaying) return;
    if (Clock::now() - self->last_activity_ >= self->server_.settings.idle_timeout) {
      self->finish("idle timeout", false, 0,
                   "no data either way for " +
                       std::to_string(self->server_.settings.idle_timeout.count()) + " ms");
      return;
    }
    self->arm_idle_timer();
  });
}

// --- The end --------------------------------------------------------------------------------

void Session::finish(const std::string& outcome, bool reset, int status,
                     const std::string& reason) {
  if (phase_ == Phase::Done) return;
  phase_ = Phase::Done;
  timer_.cancel();
  close_socket(client_, reset);
  close_socket(upstream_, reset);
  up_pump_.close();
  down_pump_.close();
  if (verdict_.allowed) log_closed(outcome, status, reason);
  --module_->active;
  --server_.active_total;
  server_.sessions.erase(this);
}

void Session::log_closed(const std::string& outcome, int status, const std::string& reason) {
  ClosedRecord record;
  record.module = module_->id;
  record.client = client_text_;
  record.method = request_ ? request_->method : "";
  record.destination = destination_;
  record.address = connected_to_;
  record.bytes_up = bytes_up_;
  record.bytes_down = bytes_down_;
  record.duration_ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_).count());
  record.outcome = outcome;
  record.status = status;
  record.upstream_status = upstream_status_;
  record.reason = reason;
  server_.log.closed(record);
}

}  // namespace oarbank::proxy
