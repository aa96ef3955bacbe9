// Where one message body ends, whatever frames it: nothing, a length, chunked coding
// (chunked_body.hpp), or the sender's close. Tells which received bytes belong to the body and
// which of them to relay now; what follows the body belongs to the next message. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/chunked_body.hpp"

namespace oarbank::proxy {

class MessageBody {
 public:
  static MessageBody none() { return MessageBody(); }
  static MessageBody length(std::uint64_t bytes);
  static MessageBody chunked();
  static MessageBody until_close();

  // Consumes the next bytes received (see ChunkedStep). After a framing error both counts are
  // 0 and failed() is true.
  ChunkedStep take(std::string_view data);
  [[nodiscard]] bool done() const { return done_; }
  [[nodiscard]] bool failed() const { return chunked_ && chunked_->failed(); }
  [[nodiscard]] std::string problem() const { return chunked_ ? chunked_->problem() : ""; }
  [[nodiscard]] bool ends_at_close() const { return until_close_; }
  // Once done(): bytes to relay after the body (a chunked body's trailer section), else empty.
  [[nodiscard]] std::string tail() const;

 private:
  bool done_ = true;
  bool until_close_ = false;
  std::uint64_t remaining_ = 0;
  std::optional<ChunkedBodyTracker> chunked_;
};

}  // namespace oarbank::proxy
