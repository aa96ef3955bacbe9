// Admission: the part of Session that decides whether a connection gets anywhere. It reads the
// request head (parse_request_head), asks for a decision (decide: the allowlist, the address
// classes, the resolver), connects to the first address that answers (by hand, see
// connect_next), and answers every refusal with its status and reason before a short linger.
// What follows an admitted request is the tunnel (tunnel.hpp) or the forwarding
// (http_forward.cpp).
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <asio/write.hpp>
#include <cstring>
#include <system_error>

#include "proxy/http_refusal.hpp"
#include "proxy/session.hpp"

namespace oarbank::proxy {

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

}  // namespace

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
  BudgetedResolver resolver(*server_.resolver, module_->lookups);
  decide(*request_->target, module_->allowlist, server_.address_context(), resolver,
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
  // Attack review (session 15): the kernel's word on where each checked address would go, just
  // before connecting: an address the node delivers to itself (a local route, one added since
  // the addresses were last read) is the node's, refused as its interface addresses are. As
  // for a resolution's answers, one such address refuses them all.
  if (verdict_.allowed) {
    for (const auto& address : verdict_.addresses) {
      if (auto why = server_.routed_to_this_node(address)) {
        verdict_.allowed = false;
        verdict_.http_status = 403;
        verdict_.reason = *why;
        break;
      }
    }
  }
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
  if (!ec) bound_socket_buffers(upstream_.native_handle());
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

}  // namespace oarbank::proxy
