#include "proxy/tunnel.hpp"

#include <asio/post.hpp>
#include <asio/write.hpp>
#include <system_error>

namespace oarbank::proxy {

namespace {

// One splice turn moves at most this much before letting the loop serve the other direction
// and the other connections.
constexpr std::size_t kTurnBytes = 4 << 20;

}  // namespace

TunnelPump::TunnelPump(TunnelOwner& owner, TunnelShared& shared, asio::ip::tcp::socket& from,
                       asio::ip::tcp::socket& to, RelayBuffer& buffer, std::uint64_t& relayed,
                       const char* from_name, const char* to_name)
    : owner_(owner),
      shared_(shared),
      from_(from),
      to_(to),
      buffer_(buffer),
      relayed_(relayed),
      from_name_(from_name),
      to_name_(to_name) {}

void TunnelPump::fail(const char* side, const std::string& what) {
  owner_.direction_failed(std::string(side) + ": " + what);
}

void TunnelPump::copy() {
  if (!owner_.relaying()) return;
  if (buffer_.size() < kRelayBufferBytes) buffer_.resize(kRelayBufferBytes);
  from_.async_read_some(
      asio::buffer(buffer_.data(), kRelayBufferBytes),
      [this, hold = owner_.hold()](const std::error_code& ec, std::size_t n) {
        if (!owner_.relaying()) return;
        if (ec) {
          if (ec == asio::error::eof) {
            source_done();
          } else {
            fail(from_name_, ec.message());
          }
          return;
        }
        owner_.activity();
        const bool bulk = n == kRelayBufferBytes;
        asio::async_write(to_, asio::buffer(buffer_.data(), n),
                          [this, hold, bulk](const std::error_code& error, std::size_t written) {
                            if (!owner_.relaying()) return;
                            if (error) {
                              fail(to_name_, error.message());
                              return;
                            }
                            relayed_ += written;
                            owner_.activity();
                            if (bulk) {
                              switch_to_splice();
                            } else {
                              copy();
                            }
                          });
      });
}

void TunnelPump::switch_to_splice() {
  std::error_code ec;
  // splice(2) on a socket blocks unless the socket itself is non-blocking. Asio has made both
  // so already (for its own asynchronous operations): then this costs no system call.
  if (!from_.native_non_blocking()) from_.native_non_blocking(true, ec);
  if (!ec && !to_.native_non_blocking()) to_.native_non_blocking(true, ec);
  if (ec || shared_.by_copy || shared_.no_pipes) {
    copy();
    return;
  }
  buffer_.release();  // the pipe holds the bytes from here on
  splice_relay(false);
}

void TunnelPump::splice_relay(bool woke_readable) {
  if (!owner_.relaying()) return;
  if (!pipe_.valid()) {
    pipe_ = SplicePipe::open(*shared_.large_pipes);
    if (!pipe_.valid()) {
      // Out of descriptors: the tunnel stays with its buffers.
      shared_.no_pipes = true;
      copy();
      return;
    }
  }
  std::size_t moved = 0;
  for (;;) {
    SpliceStep in;
    if (!source_ended_) {
      in = pipe_.fill(from_.native_handle());
      if (in.error != 0) {
        fail(from_name_, std::system_category().message(in.error));
        return;
      }
      source_ended_ = in.end_of_stream;
      // Readable, yet nothing to splice: an urgent byte (MSG_OOB). splice(2) stops at the
      // urgent mark and answers EAGAIN while the socket stays readable, so waiting again
      // would spin (found by review). read(2) steps over the mark: the buffer relay takes
      // this direction, until its next full read turns it to splice again.
      if (woke_readable && in.would_block && pipe_.held() == 0) {
        copy();
        return;
      }
      woke_readable = false;
    }
    SpliceStep out;
    if (pipe_.held() > 0) {
      out = pipe_.drain(to_.native_handle());
      if (out.error != 0) {
        fail(to_name_, std::system_category().message(out.error));
        return;
      }
      relayed_ += out.bytes;
      moved += out.bytes;
    }
    if (in.bytes > 0 || out.bytes > 0) owner_.activity();
    if (source_ended_ && pipe_.held() == 0) {
      source_done();
      return;
    }
    if (out.would_block) {
      to_.async_wait(asio::socket_base::wait_write,
                     [this, hold = owner_.hold()](const std::error_code&) { splice_relay(false); });
      return;
    }
    // With the pipe empty, EAGAIN from the source means the source is empty (with bytes held,
    // it can also mean the pipe is full).
    // Asio re-arms epoll (EPOLL_CTL_MOD) for every async_wait, which re-checks the socket's
    // state: a wait started on a socket that is already ready completes at once, so bytes
    // that arrived during this turn are not missed despite the edge-triggered registration.
    if (in.would_block && pipe_.held() == 0) {
      from_.async_wait(
          asio::socket_base::wait_read,
          [this, hold = owner_.hold()](const std::error_code&) { splice_relay(true); });
      return;
    }
    if (moved >= kTurnBytes) {
      asio::post(from_.get_executor(), [this, hold = owner_.hold()] { splice_relay(false); });
      return;
    }
  }
}

void TunnelPump::source_done() {
  // The source will send nothing more: the destination sees the same (half-close).
  ended_ = true;
  std::error_code ignored;
  to_.shutdown(asio::socket_base::shutdown_send, ignored);
  owner_.direction_ended();
}

}  // namespace oarbank::proxy
