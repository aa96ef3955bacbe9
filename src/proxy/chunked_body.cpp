#include "proxy/chunked_body.hpp"

#include <algorithm>

namespace oarbank::proxy {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool take_token(std::string_view text, std::size_t& i) {
  const std::size_t start = i;
  while (i < text.size() && is_tchar(text[i])) ++i;
  return i > start;
}

// quoted-string = DQUOTE *qdtext DQUOTE: no quoted-pair (llhttp refuses a backslash there), no
// obs-text (bytes >= 0x80).
bool take_quoted(std::string_view text, std::size_t& i) {
  if (i >= text.size() || text[i] != '"') return false;
  for (++i; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"') {
      ++i;
      return true;
    }
    if (c == '\\' || (c != '\t' && (c < 0x20 || c >= 0x7f))) return false;
  }
  return false;
}

// Fields that frame or route a message: a trailer may not carry them (RFC 9110 section 6.5.1).
bool forbidden_in_trailer(std::string_view name) {
  return iequals(name, "content-length") || iequals(name, "transfer-encoding") ||
         iequals(name, "host") || iequals(name, "trailer") || iequals(name, "connection");
}

}  // namespace

bool valid_chunk_extensions(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] != ';') return false;
    ++i;
    if (!take_token(text, i)) return false;
    if (i < text.size() && text[i] == '=') {
      ++i;
      if (i < text.size() && text[i] == '"') {
        if (!take_quoted(text, i)) return false;
      } else {
        // llhttp 8.1 (Debian 12's, and so many Node servers') refuses an extension after a
        // token value: the proxy does not relay what such an upstream cannot read.
        return take_token(text, i) && i == text.size();
      }
    }
  }
  return true;
}

void ChunkedBodyTracker::fail(std::string problem) {
  state_ = State::Failed;
  problem_ = std::move(problem);
}

void ChunkedBodyTracker::end_trailer_line() {
  if (line_.empty()) {
    last_line_empty_ = true;
    return;
  }
  std::string problem;
  if (!parse_field_line(line_, trailers_, problem)) {
    fail("trailer: " + problem);
    return;
  }
  if (forbidden_in_trailer(trailers_.back().name)) {
    fail("trailer: " + trailers_.back().name + " may not be sent as a trailer");
    return;
  }
  line_.clear();
}

std::string ChunkedBodyTracker::trailer_section() const {
  std::string out;
  for (const auto& field : trailers_)
    out.append(field.name).append(": ").append(field.value).append("\r\n");
  out.append("\r\n");
  return out;
}

ChunkedStep ChunkedBodyTracker::consume(std::string_view data) {
  std::size_t i = 0;
  // Where the trailer section starts in `data`: from there on nothing is relayed as it comes.
  std::size_t forward_end =
      state_ == State::Trailer || state_ == State::TrailerLf ? 0 : data.size();
  while (i < data.size() && state_ != State::Done && state_ != State::Failed) {
    if (state_ == State::Data) {
      const auto take =
          static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, data.size() - i));
      i += take;
      remaining_ -= take;
      if (remaining_ == 0) state_ = State::DataCr;
      continue;
    }
    const char c = data[i++];
    switch (state_) {
      case State::Size: {
        const int v = hex_value(c);
        if (v >= 0) {
          if (++digits_ > kMaxSizeDigits) {
            fail("chunk size too large");
            break;
          }
          remaining_ = remaining_ * 16 + static_cast<std::uint64_t>(v);
        } else if (digits_ > 0 && c == ';') {
          line_.assign(1, c);
          state_ = State::Extension;
        } else if (digits_ > 0 && c == '\r') {
          state_ = State::SizeLf;
        } else {
          fail("malformed chunk size");
        }
        break;
      }
      case State::Extension:
        if (c == '\r') {
          if (!valid_chunk_extensions(line_)) {
            fail("malformed chunk extension");
            break;
          }
          state_ = State::SizeLf;
        } else if (line_.size() >= kMaxLineBytes) {
          fail("chunk extension too long");
        } else {
          line_.push_back(c);
        }
        break;
      case State::SizeLf:
        if (c != '\n') {
          fail("a bare CR in a chunk-size line");
        } else {
          line_.clear();
          digits_ = 0;
          if (remaining_ == 0) {
            state_ = State::Trailer;
            forward_end = i;
          } else {
            state_ = State::Data;
          }
        }
        break;
      case State::DataCr:
        if (c == '\r') {
          state_ = State::DataLf;
        } else {
          fail("chunk data longer than its size");
        }
        break;
      case State::DataLf:
        if (c == '\n') {
          state_ = State::Size;
        } else {
          fail("a bare CR after chunk data");
        }
        break;
      case State::Trailer:
        if (c == '\r') {
          state_ = State::TrailerLf;
        } else if (c == '\n') {
          fail("a bare LF in the trailers");
        } else if (++trailer_bytes_ > kMaxTrailerBytes) {
          fail("trailers too long");
        } else {
          // Any byte is kept here; parse_field_line judges the whole line at its end (a bare
          // LF or other control character there refuses it).
          line_.push_back(c);
        }
        break;
      case State::TrailerLf:
        if (c != '\n') {
          fail("a bare CR in the trailers");
          break;
        }
        end_trailer_line();
        if (state_ == State::Failed) break;
        state_ = last_line_empty_ ? State::Done : State::Trailer;
        break;
      case State::Data:
      case State::Done:
      case State::Failed:
        break;
    }
  }
  if (state_ == State::Failed) return {};
  return {i, std::min(forward_end, i)};
}

}  // namespace oarbank::proxy
