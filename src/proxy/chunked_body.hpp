// Where a chunked request body ends (RFC 9112 section 7.1), so that the proxy forwards
// exactly the body and nothing a client appends after it. Only chunk-size lines and
// trailers are looked at byte by byte; chunk data is skipped by count. The body itself is
// relayed unchanged. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace oarbank::proxy {

class ChunkedBodyTracker {
 public:
  // Consumes the next bytes of the stream; returns how many belong to the body (fewer than
  // data.size() when the body ends inside `data`). After an error, returns 0.
  std::size_t consume(std::string_view data);
  [[nodiscard]] bool done() const { return state_ == State::Done; }
  [[nodiscard]] bool failed() const { return state_ == State::Failed; }

 private:
  enum class State {
    Size,
    Extension,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    TrailerStart,
    Trailer,
    TrailerLf,
    EndLf,
    Done,
    Failed
  };
  // Bounds on the parts read byte by byte: a chunk-size line, all trailers together.
  static constexpr std::size_t kMaxLineBytes = 4096;
  static constexpr std::size_t kMaxTrailerBytes = 16384;
  static constexpr int kMaxSizeDigits = 15;  // below 2^60: no overflow

  State state_ = State::Size;
  std::uint64_t remaining_ = 0;
  int digits_ = 0;
  std::size_t line_bytes_ = 0;
  std::size_t trailer_bytes_ = 0;
};

}  // namespace oarbank::proxy
