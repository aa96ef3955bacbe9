// Where a chunked body ends (RFC 9112 section 7.1), so that the proxy forwards exactly the
// body and nothing a client appends after it. Only chunk-size lines and trailers are looked
// at byte by byte; chunk data is skipped by count. Chunk-size lines and chunk data are relayed
// unchanged; the trailer section is held back until it is complete and every line of it is a
// field line by the head's own grammar (parse_field_line), then forwarded rewritten in
// canonical form: a line the head would refuse never reaches the upstream, even in part. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/http_head.hpp"

namespace oarbank::proxy {

struct ChunkedStep {
  std::size_t taken = 0;    // bytes of the input that belong to the body
  std::size_t forward = 0;  // the first `forward` of them are relayed now (trailers are held)
};

class ChunkedBodyTracker {
 public:
  // Consumes the next bytes of the stream. `taken` is fewer than data.size() when the body ends
  // inside `data`. After an error, both counts are 0.
  ChunkedStep consume(std::string_view data);
  [[nodiscard]] bool done() const { return state_ == State::Done; }
  [[nodiscard]] bool failed() const { return state_ == State::Failed; }
  // Why it failed, for the log.
  [[nodiscard]] const std::string& problem() const { return problem_; }
  // Once done(): what follows the last-chunk line upstream, the trailer fields as
  // "Name: value\r\n" and the final CRLF.
  [[nodiscard]] std::string trailer_section() const;

 private:
  enum class State {
    Size,
    Extension,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    Trailer,
    TrailerLf,
    Done,
    Failed
  };
  // Bounds on the parts read byte by byte: a chunk-size line, all trailers together.
  static constexpr std::size_t kMaxLineBytes = 4096;
  static constexpr std::size_t kMaxTrailerBytes = 16384;
  static constexpr int kMaxSizeDigits = 15;  // below 2^60: no overflow

  void fail(std::string problem);
  // At the CR ending a trailer line (or the empty line): judges the line held in line_.
  void end_trailer_line();

  State state_ = State::Size;
  std::uint64_t remaining_ = 0;
  int digits_ = 0;
  std::string line_;  // the chunk extensions, or the trailer line, being read
  std::size_t trailer_bytes_ = 0;
  std::vector<HeaderField> trailers_;
  bool last_line_empty_ = false;
  std::string problem_;
};

// Chunk extensions after the chunk size, from the first ';' on (RFC 9112 section 7.1.1), read
// as llhttp reads them (fuzz/proxy_llhttp_fuzz.cpp): *( ";" token [ "=" quoted-string ] ), then
// at most one last ";" token "=" token. No whitespace anywhere in the line: RFC 9112 allows BWS
// around ";" and "=", llhttp refuses it, and a parser that drops inner whitespace reads "1 0" as
// 0x10; no quoted-pair.
bool valid_chunk_extensions(std::string_view text);

}  // namespace oarbank::proxy
