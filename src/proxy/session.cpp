#include "proxy/session.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <asio/connect.hpp>
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <cstring>
#include <system_error>

#include "proxy/http_refusal.hpp"

namespace oarbank::proxy {

std::string endpoint_text(const asio::ip::tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  const std::string host = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return host + ":" + std::to_string(endpoint.port());
}

namespace {

using Clock = std::chrono::steady_clock;

// After a refusal or a forwarded response, what the client still sends is read and dropped
// for a moment before closing: closing a socket with unread data sends a reset, which can
// destroy the answer before the client reads it.
constexpr auto kLingerTime = std::chrono::seconds(1);
constexpr std::size_t kLingerBytes = 1 << 20;

asio::ip::address to_asio(const IpAddress& address) {
  if (address.v6) {
    asio::ip::address_v6::bytes_type bytes{};
    std::memcpy(bytes.data(), address.bytes.data(), 16);
    return asio::ip::address_v6(bytes);
  }
  asio::ip::address_v4::bytes_type bytes{};
  std::memcpy(bytes.data(), address.bytes.data(), 4);
  return asio::ip::address_v4(bytes);
}

void close_socket(asio::ip::tcp::socket& socket, bool reset) {
  if (!socket.is_open()) return;
  std::error_code ignored;
  if (reset) socket.set_option(asio::socket_base::linger(true, 0), ignored);
  socket.close(ignored);
}

}  // namespace

Session::Session(ServerState& server, std::shared_ptr<ModuleState> module,
                 asio::ip::tcp::socket client, const asio::ip::tcp::endpoint& peer)
    : server_(server),
      module_(std::move(module)),
      client_(std::move(client)),
      upstream_(server.io),
      timer_(server.io),
      started_(Clock::now()),
      last_activity_(started_) {
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
  arm_head_timer();
  read_head();
}

void Session::arm_head_timer() {
  timer_.expires_after(server_.settings.header_read_timeout);
  timer_.async_wait([self = shared_from_this(), serial = serial_](const std::error_code& ec) {
    if (ec || self->phase_ != Phase::Head || serial != self->serial_) return;
    if (serial > 0 && self->received_ == 0) {
      // A kept-alive connection that asks nothing more: closed without an answer, as servers
      // close idle connections (RFC 9112 section 9.5); nothing was decided, nothing is logged.
      self->finish("closed", false);
      return;
    }
    self->refuse(504,
                 "no complete request head within " +
                     std::to_string(self->server_.settings.header_read_timeout.count()) + " ms",
                 true);
  });
}

void Session::abort(const std::string& outcome) {
  if (phase_ != Phase::Done) finish(outcome, false);
}

// --- The request head -------------------------------------------------------------------

void Session::read_head() {
  const std::size_t limit = server_.settings.max_header_bytes;
  client_.async_read_some(
      asio::buffer(up_buf_.data() + received_, limit - received_),
      [self = shared_from_this(), limit](const std::error_code& ec, std::size_t n) {
        if (self->phase_ != Phase::Head) return;
        if (ec) {
          // The client left before asking anything: nothing to decide, nothing to log.
          self->finish("client closed", false);
          return;
        }
        self->received_ += n;
        self->on_head(
            parse_request_head(std::string_view(self->up_buf_.data(), self->received_), limit));
      });
}

void Session::on_head(const RequestParse& parse) {
  switch (parse.status) {
    case RequestParse::Status::Incomplete:
      read_head();
      return;
    case RequestParse::Status::Refused:
      refuse(parse.http_status, parse.problem, true);
      return;
    case RequestParse::Status::Complete:
      break;
  }
  request_ = parse.request;
  head_bytes_ = parse.head_bytes;
  if (request_->form == RequestForm::Origin) {
    refuse(400, "not a proxy request: use CONNECT host:port or an absolute http:// URL", true);
    return;
  }
  destination_ = request_->target->authority();
  phase_ = Phase::Deciding;
  decide(*request_->target, module_->allowlist, server_.address_context(), *server_.resolver,
         [self = shared_from_this()](Verdict verdict) { self->on_verdict(std::move(verdict)); });
}

DecisionRecord Session::decision_record() const {
  DecisionRecord record;
  record.module = module_->id;
  record.client = client_text_;
  if (request_) record.method = request_->method;
  record.destination = destination_;
  for (const auto& address : verdict_.addresses) record.addresses.push_back(address.to_string());
  record.allowed = verdict_.allowed;
  record.status = verdict_.http_status;
  record.reason = verdict_.reason;
  return record;
}

void Session::on_verdict(Verdict verdict) {
  if (phase_ != Phase::Deciding) return;  // aborted while resolving
  verdict_ = std::move(verdict);
  if (!verdict_.allowed) {
    server_.log.decision(decision_record());
    refuse(verdict_.http_status, verdict_.reason, false);
    return;
  }
  phase_ = Phase::Connecting;
  connect_next();
  // Logged once the connection is under way: on a local link it is established by now and
  // the client has its 200, so the line costs the handshake nothing. No handler runs inline,
  // so no closed line can come before it.
  server_.log.decision(decision_record());
}

// --- Connecting ---------------------------------------------------------------------------

void Session::connect_next() {
  if (next_address_ >= verdict_.addresses.size()) {
    end_outcome_ = "connect failed";
    refuse(502, "connecting to " + destination_ + " failed: " + connect_error_, false);
    return;
  }
  const asio::ip::tcp::endpoint endpoint(to_asio(verdict_.addresses[next_address_++]),
                                         request_->target->port);
  std::error_code ec;
  close_socket(upstream_, false);
  upstream_.open(endpoint.protocol(), ec);
  if (!ec) upstream_.native_non_blocking(true, ec);
  if (ec) {
    connect_error_ = endpoint_text(endpoint) + ": " + ec.message();
    connect_next();
    return;
  }
  // connect(2) by hand rather than Asio's async_connect: on loopback or a local link the
  // kernel has usually completed the handshake before connect returns EINPROGRESS, and then
  // no turn of the event loop is spent waiting for it.
  const int fd = upstream_.native_handle();
  if (::connect(fd, endpoint.data(), static_cast<socklen_t>(endpoint.size())) == 0) {
    connect_done(endpoint);
    return;
  }
  if (errno != EINPROGRESS) {
    connect_error_ = endpoint_text(endpoint) + ": " + std::system_category().message(errno);
    connect_next();
    return;
  }
  pollfd writable{fd, POLLOUT, 0};
  if (::poll(&writable, 1, 0) == 1) {
    connect_done(endpoint);
    return;
  }
  arm_connect_timer();
  upstream_.async_wait(asio::socket_base::wait_write,
                       [self = shared_from_this(), endpoint](const std::error_code& error) {
                         if (self->phase_ != Phase::Connecting) return;
                         if (error) {
                           self->connect_error_ = endpoint_text(endpoint) + ": " + error.message();
                           self->connect_next();
                           return;
                         }
                         self->connect_done(endpoint);
                       });
}

void Session::connect_done(const asio::ip::tcp::endpoint& endpoint) {
  int error = 0;
  socklen_t size = sizeof error;
  if (::getsockopt(upstream_.native_handle(), SOL_SOCKET, SO_ERROR, &error, &size) != 0) {
    error = errno;
  }
  if (error != 0) {
    connect_error_ = endpoint_text(endpoint) + ": " + std::system_category().message(error);
    connect_next();
    return;
  }
  connected_to_ = endpoint_text(endpoint);
  on_connected();
}

void Session::arm_connect_timer() {
  // Once for every address tried: the timeout bounds the whole connecting phase.
  if (connect_timer_armed_) return;
  connect_timer_armed_ = true;
  timer_.expires_after(server_.settings.connect_timeout);
  timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (ec || self->phase_ != Phase::Connecting) return;
    close_socket(self->upstream_, false);
    self->end_outcome_ = "connect timeout";
    self->refuse(504,
                 "connecting to " + self->destination_ + " timed out after " +
                     std::to_string(self->server_.settings.connect_timeout.count()) + " ms",
                 false);
  });
}

void Session::on_connected() {
  phase_ = Phase::Relaying;
  std::error_code ignored;
  upstream_.set_option(asio::ip::tcp::no_delay(true), ignored);
  touch();
  arm_idle_timer();
  if (request_->form == RequestForm::Connect) {
    start_tunnel();
  } else {
    start_forward();
  }
}

// --- Refusals -----------------------------------------------------------------------------

void Session::refuse(int status, const std::string& reason, bool log_decision) {
  if (phase_ == Phase::Done) return;
  phase_ = Phase::Refusing;
  end_status_ = status;
  end_reason_ = reason;
  if (end_outcome_.empty()) end_outcome_ = "refused";
  if (log_decision) {
    verdict_.allowed = false;
    verdict_.http_status = status;
    verdict_.reason = reason;
    server_.log.decision(decision_record());
  }
  close_socket(upstream_, false);
  out_head_ = refusal_response(status, reason);
  asio::async_write(client_, asio::buffer(out_head_),
                    [self = shared_from_this()](const std::error_code& ec, std::size_t) {
                      if (self->phase_ != Phase::Refusing) return;
                      if (ec) {
                        self->finish(self->end_outcome_, false, self->end_status_,
                                     self->end_reason_);
                        return;
                      }
                      self->linger_close();
                    });
}

void Session::linger_close() {
  phase_ = Phase::Refusing;
  std::error_code ignored;
  client_.shutdown(asio::socket_base::shutdown_send, ignored);
  timer_.expires_after(
      std::min<Clock::duration>(kLingerTime, server_.settings.header_read_timeout));
  timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (ec || self->phase_ != Phase::Refusing) return;
    self->finish(self->end_outcome_, false, self->end_status_, self->end_reason_);
  });
  drain_client();
}

void Session::drain_client() {
  // The bytes are dropped: one scratch buffer per thread serves every connection.
  thread_local std::array<char, 16384> scratch;
  client_.async_read_some(
      asio::buffer(scratch), [self = shared_from_this()](const std::error_code& ec, std::size_t n) {
        if (self->phase_ != Phase::Refusing) return;
        self->drained_ += n;
        if (ec || self->drained_ > kLingerBytes) {
          self->finish(self->end_outcome_, false, self->end_status_, self->end_reason_);
          return;
        }
        self->drain_client();
      });
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
                      self->relay(Direction::Down);
                    });
  // Bytes the client sent right after the head (a TLS ClientHello) belong to the tunnel.
  const std::size_t extra = received_ - head_bytes_;
  if (extra == 0) {
    relay(Direction::Up);
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
                      self->relay(Direction::Up);
                    });
}

void Session::relay(Direction direction) {
  // A tunnel starts with read/write through a buffer: a handshake's few small messages cost
  // fewer system calls so than through pipes (no pipe to make and close, no re-arming of
  // epoll per wait). A read that fills the whole buffer shows bulk: that direction then moves
  // to splice (switch_to_splice).
  if (direction == Direction::Up) {
    pump_up();
  } else {
    pump_down();
  }
}

void Session::switch_to_splice(Direction direction) {
  const bool up = direction == Direction::Up;
  std::error_code ec;
  // splice(2) on a socket blocks unless the socket itself is non-blocking. Asio has made both
  // so already (for its own asynchronous operations): then this costs no system call.
  if (!client_.native_non_blocking()) client_.native_non_blocking(true, ec);
  if (!ec && !upstream_.native_non_blocking()) upstream_.native_non_blocking(true, ec);
  if (ec || server_.relay_tunnels_by_copy || no_pipes_) {
    relay(direction);
    return;
  }
  (up ? up_buf_ : down_buf_).release();  // the pipe holds the bytes from here on
  splice_relay(direction, false);
}

void Session::splice_relay(Direction direction, bool woke_readable) {
  if (phase_ != Phase::Relaying) return;
  const bool up = direction == Direction::Up;
  asio::ip::tcp::socket& from = up ? client_ : upstream_;
  asio::ip::tcp::socket& to = up ? upstream_ : client_;
  const char* from_name = up ? "client: " : "upstream: ";
  const char* to_name = up ? "upstream: " : "client: ";
  SplicePipe& pipe = up ? up_pipe_ : down_pipe_;
  if (!pipe.valid()) {
    pipe = SplicePipe::open(server_.large_pipes);
    if (!pipe.valid()) {
      // Out of descriptors: the tunnel stays with its buffers.
      no_pipes_ = true;
      relay(direction);
      return;
    }
  }
  bool& source_ended = up ? up_source_ended_ : down_source_ended_;
  std::uint64_t& relayed = up ? bytes_up_ : bytes_down_;
  auto again = [self = shared_from_this(), direction](const std::error_code&) {
    self->splice_relay(direction, false);
  };
  auto again_readable = [self = shared_from_this(), direction](const std::error_code&) {
    self->splice_relay(direction, true);
  };
  // One turn moves at most this much before letting the loop serve the other direction and
  // the other connections.
  constexpr std::size_t kTurnBytes = 4 << 20;
  std::size_t moved = 0;
  for (;;) {
    SpliceStep in;
    if (!source_ended) {
      in = pipe.fill(from.native_handle());
      if (in.error != 0) {
        finish("reset", true, 0, from_name + std::system_category().message(in.error));
        return;
      }
      source_ended = in.end_of_stream;
      // Readable, yet nothing to splice: an urgent byte (MSG_OOB). splice(2) stops at the
      // urgent mark and answers EAGAIN while the socket stays readable, so waiting again
      // would spin (found by review). read(2) steps over the mark: the buffer relay takes
      // this direction, until its next full read turns it to splice again.
      if (woke_readable && in.would_block && pipe.held() == 0) {
        relay(direction);
        return;
      }
      woke_readable = false;
    }
    SpliceStep out;
    if (pipe.held() > 0) {
      out = pipe.drain(to.native_handle());
      if (out.error != 0) {
        finish("reset", true, 0, to_name + std::system_category().message(out.error));
        return;
      }
      relayed += out.bytes;
      moved += out.bytes;
    }
    if (in.bytes > 0 || out.bytes > 0) touch();
    if (source_ended && pipe.held() == 0) {
      if (up) {
        up_finished();
      } else {
        down_finished();
      }
      return;
    }
    if (out.would_block) {
      to.async_wait(asio::socket_base::wait_write, std::move(again));
      return;
    }
    // With the pipe empty, EAGAIN from the source means the source is empty (with bytes held,
    // it can also mean the pipe is full).
    // Asio re-arms epoll (EPOLL_CTL_MOD) for every async_wait, which re-checks the socket's
    // state: a wait started on a socket that is already ready completes at once, so bytes
    // that arrived during this turn are not missed despite the edge-triggered registration.
    if (in.would_block && pipe.held() == 0) {
      from.async_wait(asio::socket_base::wait_read, std::move(again_readable));
      return;
    }
    if (moved >= kTurnBytes) {
      asio::post(from.get_executor(), [again] { again({}); });
      return;
    }
  }
}

void Session::pump_up() {
  if (phase_ != Phase::Relaying) return;
  if (up_buf_.size() < kRelayBufferBytes) up_buf_.resize(kRelayBufferBytes);
  client_.async_read_some(asio::buffer(up_buf_.data(), kRelayBufferBytes),
                          [self = shared_from_this()](const std::error_code& ec, std::size_t n) {
                            if (self->phase_ != Phase::Relaying) return;
                            if (ec) {
                              if (ec == asio::error::eof) {
                                self->up_finished();
                              } else {
                                self->finish("reset", true, 0, "client: " + ec.message());
                              }
                              return;
                            }
                            self->touch();
                            const bool bulk = n == kRelayBufferBytes;
                            asio::async_write(
                                self->upstream_, asio::buffer(self->up_buf_.data(), n),
                                [self, bulk](const std::error_code& error, std::size_t written) {
                                  if (self->phase_ != Phase::Relaying) return;
                                  if (error) {
                                    self->finish("reset", true, 0, "upstream: " + error.message());
                                    return;
                                  }
                                  self->bytes_up_ += written;
                                  self->touch();
                                  if (bulk) {
                                    self->switch_to_splice(Direction::Up);
                                  } else {
                                    self->pump_up();
                                  }
                                });
                          });
}

void Session::up_finished() {
  // The client will send nothing more: the upstream sees the same (half-close).
  up_done_ = true;
  std::error_code ignored;
  upstream_.shutdown(asio::socket_base::shutdown_send, ignored);
  if (down_done_) finish("closed", false);
}

void Session::pump_down() {
  if (phase_ != Phase::Relaying) return;
  if (down_buf_.size() < kRelayBufferBytes) down_buf_.resize(kRelayBufferBytes);
  upstream_.async_read_some(asio::buffer(down_buf_.data(), down_buf_.size()),
                            [self = shared_from_this()](const std::error_code& ec, std::size_t n) {
                              if (self->phase_ != Phase::Relaying) return;
                              if (ec) {
                                if (ec == asio::error::eof) {
                                  self->down_finished();
                                } else {
                                  self->finish("reset", true, 0, "upstream: " + ec.message());
                                }
                                return;
                              }
                              self->touch();
                              const bool bulk = n == kRelayBufferBytes;
                              asio::async_write(
                                  self->client_, asio::buffer(self->down_buf_.data(), n),
                                  [self, bulk](const std::error_code& error, std::size_t written) {
                                    if (self->phase_ != Phase::Relaying) return;
                                    if (error) {
                                      self->finish("reset", true, 0, "client: " + error.message());
                                      return;
                                    }
                                    self->bytes_down_ += written;
                                    self->touch();
                                    if (bulk) {
                                      self->switch_to_splice(Direction::Down);
                                    } else {
                                      self->pump_down();
                                    }
                                  });
                            });
}

void Session::down_finished() {
  down_done_ = true;
  std::error_code ignored;
  client_.shutdown(asio::socket_base::shutdown_send, ignored);
  if (up_done_) finish("closed", false);
}

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
  up_pipe_ = SplicePipe{};
  down_pipe_ = SplicePipe{};
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
