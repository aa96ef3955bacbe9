// One client connection: read and judge the request head, resolve, connect (admission.cpp),
// then relay a CONNECT tunnel (one TunnelPump per direction, tunnel.hpp) or forward a
// plain-HTTP request (http_forward.cpp), after which a kept-alive connection starts over with its
// next request, judged on its own. Memory is bounded per connection (two fixed buffers, or two
// pipes); every phase has its timeout; every path closes both sockets.
#pragma once

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/decision.hpp"
#include "proxy/http_request.hpp"
#include "proxy/message_body.hpp"
#include "proxy/relay_buffer.hpp"
#include "proxy/server_state.hpp"
#include "proxy/tunnel.hpp"

namespace oarbank::proxy {

// "192.0.2.1:443", "[2001:db8::1]:443": addresses as the log lines show them.
std::string endpoint_text(const asio::ip::tcp::endpoint& endpoint);

class Session : public std::enable_shared_from_this<Session>, private TunnelOwner {
 public:
  // `peer`: the client's address, as accept(2) gave it.
  Session(ServerState& server, std::shared_ptr<ModuleState> module, asio::ip::tcp::socket client,
          const asio::ip::tcp::endpoint& peer);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start();
  // Ends the connection now (the server stops, or the module was removed).
  void abort(const std::string& outcome);
  [[nodiscard]] const ModuleState& module() const { return *module_; }

 private:
  enum class Phase { Head, Deciding, Connecting, Relaying, Refusing, Done };

  // Closes `socket` (with RST when `reset`), ignoring errors: every path ends here.
  static void close_socket(asio::ip::tcp::socket& socket, bool reset);
  // Admission (admission.cpp): the head, the decision, the connect, the refusals.
  // The header_read_timeout for the request head now awaited.
  void arm_head_timer();
  void read_head();
  void on_head(const RequestParse& parse);
  void on_verdict(Verdict verdict);
  void connect_next();
  // The connect on the upstream socket has ended: SO_ERROR says how.
  void connect_done(const asio::ip::tcp::endpoint& endpoint);
  void arm_connect_timer();
  void on_connected();
  // Answers `status` with `reason`, then closes after a short linger. `log_decision`: this
  // refusal is the decision (else it follows an allowed decision, and ends it).
  void refuse(int status, const std::string& reason, bool log_decision);
  void linger_close();
  void drain_client();
  // The CONNECT tunnel (session.cpp): the 200, the bytes sent after the head, the two pumps.
  void start_tunnel();
  // Forwarding an absolute-form request (http_forward.cpp).
  void start_forward();
  void forward_request_body();
  // Writes the head (when `head`) and `forward` bytes of up_buf_ from `offset`, then the body's
  // tail once it is complete, to the upstream.
  void write_request(bool head, std::size_t offset, std::size_t forward);
  // Bytes after the request body (pipelined requests) are held for the next turn, undecided.
  void hold_pipelined(const char* data, std::size_t size);
  void read_response_head();
  void on_response_bytes();
  void write_response(std::size_t offset, std::size_t size, bool with_head);
  void forward_response_body();
  void response_done();
  // The connection carries another request: log this one's end, reset, read the next head.
  void next_request();
  // The forwarding callbacks of an earlier request, still queued, do nothing.
  [[nodiscard]] bool stale(std::uint64_t serial) const {
    return phase_ != Phase::Relaying || serial != serial_;
  }
  // TunnelOwner: what the two pumps of a CONNECT tunnel report.
  std::shared_ptr<void> hold() override { return shared_from_this(); }
  bool relaying() const override { return phase_ == Phase::Relaying; }
  void activity() override { touch(); }
  void direction_ended() override;
  void direction_failed(const std::string& reason) override;
  void arm_idle_timer();
  void touch() { last_activity_ = std::chrono::steady_clock::now(); }
  // Closes both sockets (with RST when `reset`), logs the closed line when the connection
  // was allowed, releases the slot. Idempotent.
  void finish(const std::string& outcome, bool reset, int status = 0,
              const std::string& reason = {});
  // The closed line of the request now ending (allowed requests only).
  void log_closed(const std::string& outcome, int status, const std::string& reason);
  DecisionRecord decision_record() const;

  ServerState& server_;
  std::shared_ptr<ModuleState> module_;
  asio::ip::tcp::socket client_;
  asio::ip::tcp::socket upstream_;
  asio::steady_timer timer_;
  Phase phase_ = Phase::Head;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point last_activity_;
  std::string client_text_;

  // Client to upstream; also holds the request head while it is read.
  RelayBuffer up_buf_;
  std::size_t received_ = 0;
  // Upstream to client; also holds the response head while it is read (forwarding).
  RelayBuffer down_buf_;
  std::size_t down_len_ = 0;

  // CONNECT tunnels: what both directions share (the pumps are declared last).
  TunnelShared tunnel_shared_;

  std::optional<HttpRequest> request_;
  std::size_t head_bytes_ = 0;
  std::string destination_;
  Verdict verdict_;
  std::size_t next_address_ = 0;
  std::string connect_error_;
  bool connect_timer_armed_ = false;
  std::string connected_to_;
  std::string out_head_;  // the forwarded request head, or the refusal, or the response head
  std::string response_head_;

  // Forwarding: where the request body and the response body end.
  MessageBody request_body_;
  MessageBody response_body_;
  std::string request_tail_;   // the request body's canonical trailer section
  std::string response_tail_;  // the response body's
  std::string pipelined_;      // what the client sent after the request body
  std::optional<int> upstream_status_;
  bool response_started_ = false;
  bool request_sent_ = false;  // the head and the whole body are written upstream
  bool keep_alive_ = false;    // the client's connection carries another request after this
  std::uint64_t serial_ = 0;   // the number of the request on this connection, from 0

  std::uint64_t bytes_up_ = 0;
  std::uint64_t bytes_down_ = 0;
  std::size_t drained_ = 0;
  // How the connection ended, for the closed line when it ends after a linger.
  std::string end_outcome_;
  int end_status_ = 0;
  std::string end_reason_;

  // A CONNECT tunnel's two directions: client to upstream (through up_buf_, which holds the
  // request head before), upstream to client.
  TunnelPump up_pump_;
  TunnelPump down_pump_;
};

}  // namespace oarbank::proxy
