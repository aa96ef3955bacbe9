// Forwarding one absolute-form request (`GET http://host/path`): the part of Session that
// speaks HTTP to the upstream. The request goes out with a canonical head and its body exactly
// as long as its framing says (MessageBody); the response comes back with a rewritten head and
// its body as long as its own framing says. When both ends are known and the client allows it,
// the client's connection is kept and its next request is read and judged on its own
// (next_request); bytes the client sent ahead of time wait there, undecided and unforwarded.
// One upstream connection per request: the upstream is told "Connection: close".
#include <algorithm>
#include <array>
#include <asio/write.hpp>
#include <cstring>

#include "proxy/http_response.hpp"
#include "proxy/session.hpp"

namespace oarbank::proxy {

void Session::start_forward() {
  down_buf_.resize(kRelayBufferBytes);  // holds the response head as it is read
  out_head_ = forwarded_request_head(*request_);
  if (request_->chunked) {
    request_body_ = MessageBody::chunked();
  } else {
    request_body_ = MessageBody::length(request_->content_length.value_or(0));
  }
  const std::string_view after_head(up_buf_.data() + head_bytes_, received_ - head_bytes_);
  const ChunkedStep step = request_body_.take(after_head);
  if (request_body_.failed()) {
    end_outcome_ = "refused";
    refuse(400, "malformed chunked request body: " + request_body_.problem(), false);
    return;
  }
  if (request_body_.done())
    hold_pipelined(after_head.data() + step.taken, after_head.size() - step.taken);
  write_request(true, head_bytes_, step.forward);
  read_response_head();
}

void Session::hold_pipelined(const char* data, std::size_t size) { pipelined_.assign(data, size); }

void Session::write_request(bool head, std::size_t offset, std::size_t forward) {
  const bool done = request_body_.done();
  if (done) request_tail_ = request_body_.tail();
  const std::array<asio::const_buffer, 3> buffers = {
      asio::buffer(head ? std::string_view(out_head_) : std::string_view()),
      asio::buffer(up_buf_.data() + offset, forward),
      asio::buffer(done ? std::string_view(request_tail_) : std::string_view())};
  asio::async_write(upstream_, buffers,
                    [self = shared_from_this(), serial = serial_, done](const std::error_code& ec,
                                                                        std::size_t n) {
                      if (self->stale(serial)) return;
                      if (ec) {
                        self->finish("reset", true, 0, "upstream: " + ec.message());
                        return;
                      }
                      self->bytes_up_ += n;
                      self->touch();
                      if (!done) {
                        self->forward_request_body();
                        return;
                      }
                      // The request is complete: what the client sends next is not read until the
                      // response has ended (and then as the next request, judged on its own).
                      self->request_sent_ = true;
                    });
}

void Session::forward_request_body() {
  if (up_buf_.size() < kRelayBufferBytes) up_buf_.resize(kRelayBufferBytes);
  client_.async_read_some(
      asio::buffer(up_buf_.data(), kRelayBufferBytes),
      [self = shared_from_this(), serial = serial_](const std::error_code& ec, std::size_t n) {
        if (self->stale(serial)) return;
        if (ec) {
          if (ec == asio::error::eof) {
            // The client ended before its body did: the upstream sees the same (half-close).
            std::error_code ignored;
            self->upstream_.shutdown(asio::socket_base::shutdown_send, ignored);
          } else {
            self->finish("reset", true, 0, "client: " + ec.message());
          }
          return;
        }
        self->touch();
        const ChunkedStep step =
            self->request_body_.take(std::string_view(self->up_buf_.data(), n));
        if (self->request_body_.failed()) {
          self->finish("malformed request body", true, 0,
                       "invalid chunked framing: " + self->request_body_.problem());
          return;
        }
        if (self->request_body_.done())
          self->hold_pipelined(self->up_buf_.data() + step.taken, n - step.taken);
        self->write_request(false, 0, step.forward);
      });
}

void Session::read_response_head() {
  upstream_.async_read_some(
      asio::buffer(down_buf_.data() + down_len_, down_buf_.size() - down_len_),
      [self = shared_from_this(), serial = serial_](const std::error_code& ec, std::size_t n) {
        if (self->stale(serial)) return;
        if (ec) {
          const std::string why = ec == asio::error::eof ? "the upstream closed without a response"
                                                         : "upstream: " + ec.message();
          if (self->response_started_) {
            self->finish("reset", true, 0, why);
          } else {
            self->end_outcome_ = "upstream error";
            self->refuse(502, why, false);
          }
          return;
        }
        self->touch();
        self->down_len_ += n;
        self->on_response_bytes();
      });
}

void Session::on_response_bytes() {
  ResponseContext context;
  context.head_request = request_->method == "HEAD";
  // Whether the request body has been read to its end is known only later: write_response
  // checks it again before the connection is kept.
  context.client_keep_alive =
      request_->minor_version == 1 &&
      std::none_of(request_->connection_names.begin(), request_->connection_names.end(),
                   [](const std::string& name) { return iequals(name, "close"); });
  const ResponseParse parse = parse_response_head(std::string_view(down_buf_.data(), down_len_),
                                                  kMaxResponseHeadBytes, context);
  switch (parse.status) {
    case ResponseParse::Status::Incomplete:
      read_response_head();
      return;
    case ResponseParse::Status::Invalid:
      if (response_started_) {
        finish("upstream protocol error", true, 0, parse.problem);
      } else {
        end_outcome_ = "upstream protocol error";
        refuse(502, parse.problem, false);
      }
      return;
    case ResponseParse::Status::Complete:
      break;
  }
  response_started_ = true;
  response_head_ = parse.rewritten;
  const std::size_t rest = down_len_ - parse.head_bytes;
  if (parse.interim) {
    // 100 Continue and the like: pass it on, then read the next head from what is left.
    std::memmove(down_buf_.data(), down_buf_.data() + parse.head_bytes, rest);
    down_len_ = rest;
    asio::async_write(
        client_, asio::buffer(response_head_),
        [self = shared_from_this(), serial = serial_](const std::error_code& ec, std::size_t n) {
          if (self->stale(serial)) return;
          if (ec) {
            self->finish("reset", true, 0, "client: " + ec.message());
            return;
          }
          self->bytes_down_ += n;
          self->on_response_bytes();
        });
    return;
  }
  upstream_status_ = parse.status_code;
  keep_alive_ = parse.keep_alive;
  switch (parse.body) {
    case BodyFraming::None:
      response_body_ = MessageBody::none();
      break;
    case BodyFraming::Length:
      response_body_ = MessageBody::length(parse.content_length);
      break;
    case BodyFraming::Chunked:
      response_body_ = MessageBody::chunked();
      break;
    case BodyFraming::UntilClose:
      response_body_ = MessageBody::until_close();
      break;
  }
  write_response(parse.head_bytes, rest, true);
}

void Session::write_response(std::size_t offset, std::size_t size, bool with_head) {
  // Bytes past the response's end (an upstream that sends more than it framed) are dropped:
  // they would be read by the client as the answer to its next request.
  const ChunkedStep step = response_body_.take(std::string_view(down_buf_.data() + offset, size));
  if (response_body_.failed()) {
    finish("upstream protocol error", true, 0,
           "invalid chunked response body: " + response_body_.problem());
    return;
  }
  const bool done = response_body_.done();
  if (done) response_tail_ = response_body_.tail();
  const std::array<asio::const_buffer, 3> buffers = {
      asio::buffer(with_head ? std::string_view(response_head_) : std::string_view()),
      asio::buffer(down_buf_.data() + offset, step.forward),
      asio::buffer(done ? std::string_view(response_tail_) : std::string_view())};
  asio::async_write(client_, buffers,
                    [self = shared_from_this(), serial = serial_, done](const std::error_code& ec,
                                                                        std::size_t n) {
                      if (self->stale(serial)) return;
                      if (ec) {
                        self->finish("reset", true, 0, "client: " + ec.message());
                        return;
                      }
                      self->bytes_down_ += n;
                      self->touch();
                      if (done) {
                        self->response_done();
                      } else {
                        self->forward_response_body();
                      }
                    });
}

void Session::forward_response_body() {
  upstream_.async_read_some(
      asio::buffer(down_buf_.data(), down_buf_.size()),
      [self = shared_from_this(), serial = serial_](const std::error_code& ec, std::size_t n) {
        if (self->stale(serial)) return;
        if (ec == asio::error::eof && self->response_body_.ends_at_close()) {
          self->response_done();
          return;
        }
        if (ec) {
          // A response cut short: the client must not take it for a whole one.
          self->finish("reset", true, 0,
                       ec == asio::error::eof ? "the upstream closed inside the response body"
                                              : "upstream: " + ec.message());
          return;
        }
        self->touch();
        self->write_response(0, n, false);
      });
}

void Session::response_done() {
  std::error_code ignored;
  upstream_.close(ignored);  // the upstream was told "Connection: close"
  end_outcome_ = "closed";
  // Kept only when the request went out whole: else the client is still sending a body no one
  // reads, and its next request could not be told from it.
  if (keep_alive_ && request_sent_) {
    next_request();
    return;
  }
  linger_close();
}

void Session::next_request() {
  timer_.cancel();
  log_closed("closed", 0, {});
  ++serial_;
  phase_ = Phase::Head;
  started_ = std::chrono::steady_clock::now();
  touch();
  request_.reset();
  head_bytes_ = 0;
  destination_.clear();
  verdict_ = Verdict{};
  next_address_ = 0;
  connect_error_.clear();
  connect_timer_armed_ = false;
  connected_to_.clear();
  out_head_.clear();
  response_head_.clear();
  down_len_ = 0;
  request_body_ = MessageBody::none();
  response_body_ = MessageBody::none();
  request_tail_.clear();
  response_tail_.clear();
  upstream_status_.reset();
  response_started_ = false;
  request_sent_ = false;
  keep_alive_ = false;
  bytes_up_ = 0;
  bytes_down_ = 0;
  end_outcome_.clear();
  end_status_ = 0;
  end_reason_.clear();
  // What the client sent ahead of time is the start of its next request.
  std::memcpy(up_buf_.data(), pipelined_.data(), pipelined_.size());
  received_ = pipelined_.size();
  pipelined_.clear();
  arm_head_timer();
  const RequestParse parse = parse_request_head(std::string_view(up_buf_.data(), received_),
                                                server_.settings.max_header_bytes);
  if (parse.status == RequestParse::Status::Incomplete) {
    read_head();
  } else {
    on_head(parse);
  }
}

}  // namespace oarbank::proxy
