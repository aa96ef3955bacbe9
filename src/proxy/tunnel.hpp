// One direction of a CONNECT tunnel: bytes from one socket to the other, through a buffer while
// reads are small (a handshake), inside the kernel (splice_pipe.hpp) from the first read that
// fills the buffer. The same code serves both directions (client to upstream, upstream to
// client); the session owns two and learns through TunnelOwner when a direction ends or
// fails. It knows nothing of HTTP or of the server, so a test drives it over a socketpair with
// an io_context of its own (tests/proxy/unit/tunnel_test.cpp).
#pragma once

#include <asio/ip/tcp.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "proxy/relay_buffer.hpp"
#include "proxy/splice_pipe.hpp"

namespace oarbank::proxy {

// What the two directions of one connection share.
struct TunnelShared {
  // The server's count of 1 MiB pipes (SplicePipe::open, kLargePipesPerServer).
  std::size_t* large_pipes = nullptr;
  // Relay through buffers only (TestingOnlyExemptions: the copy relay measured alone).
  bool by_copy = false;
  // pipe2 failed (out of descriptors): both directions stay with their buffers.
  bool no_pipes = false;
};

// The connection a pump belongs to (the Session).
class TunnelOwner {
 public:
  // Kept by every pending operation of a pump, so that the owner outlives it.
  [[nodiscard]] virtual std::shared_ptr<void> hold() = 0;
  // False once the connection has ended: queued completions then do nothing.
  [[nodiscard]] virtual bool relaying() const = 0;
  // Bytes moved (the idle timeout counts from the last).
  virtual void activity() = 0;
  // A pump's source has ended and every byte is written; its destination has been shut down
  // for sending (a half-close passed on). TunnelPump::ended() says which.
  virtual void direction_ended() = 0;
  // A read or a write failed: `reason` names the side ("client: Connection reset by peer").
  virtual void direction_failed(const std::string& reason) = 0;

 protected:
  ~TunnelOwner() = default;
};

class TunnelPump {
 public:
  // `from_name`, `to_name`: "client", "upstream", as the closed line names a side. `buffer`
  // may already be in use (the request head's buffer); `relayed` counts the bytes written to
  // `to`. All of them outlive the pump.
  TunnelPump(TunnelOwner& owner, TunnelShared& shared, asio::ip::tcp::socket& from,
             asio::ip::tcp::socket& to, RelayBuffer& buffer, std::uint64_t& relayed,
             const char* from_name, const char* to_name);
  TunnelPump(const TunnelPump&) = delete;
  TunnelPump& operator=(const TunnelPump&) = delete;

  // Starts relaying through the buffer.
  void start() { copy(); }
  // Drops the pipe (the connection ends).
  void close() { pipe_ = SplicePipe{}; }
  [[nodiscard]] bool ended() const { return ended_; }
  // Whether this direction is now relayed by splice (for tests).
  [[nodiscard]] bool splicing() const { return pipe_.valid(); }

 private:
  // A tunnel starts with read/write through a buffer: a handshake's few small messages cost
  // fewer system calls so than through pipes (no pipe to make and close, no re-arming of
  // epoll per wait). A read that fills the whole buffer shows bulk: the direction then moves
  // to splice (switch_to_splice) while pipes can be had.
  void copy();
  void switch_to_splice();
  // `woke_readable`: called because the source was reported readable.
  void splice_relay(bool woke_readable);
  void source_done();
  void fail(const char* side, const std::string& what);

  TunnelOwner& owner_;
  TunnelShared& shared_;
  asio::ip::tcp::socket& from_;
  asio::ip::tcp::socket& to_;
  RelayBuffer& buffer_;
  std::uint64_t& relayed_;
  const char* from_name_;
  const char* to_name_;
  SplicePipe pipe_;  // made when the direction turns to bulk
  bool source_ended_ = false;
  bool ended_ = false;
};

}  // namespace oarbank::proxy
