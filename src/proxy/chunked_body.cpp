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

}  // namespace

std::size_t ChunkedBodyTracker::consume(std::string_view data) {
  std::size_t i = 0;
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
            state_ = State::Failed;
            break;
          }
          remaining_ = remaining_ * 16 + static_cast<std::uint64_t>(v);
        } else if (digits_ > 0 && (c == ';' || c == ' ' || c == '\t')) {
          state_ = State::Extension;
        } else if (digits_ > 0 && c == '\r') {
          state_ = State::SizeLf;
        } else {
          state_ = State::Failed;
        }
        break;
      }
      case State::Extension:
        // Extensions are relayed, not interpreted: visible characters, SP and HTAB only.
        if (c == '\r') {
          state_ = State::SizeLf;
        } else if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f ||
                   ++line_bytes_ > kMaxLineBytes) {
          state_ = State::Failed;
        }
        break;
      case State::SizeLf:
        if (c != '\n') {
          state_ = State::Failed;
        } else {
          line_bytes_ = 0;
          digits_ = 0;
          state_ = remaining_ == 0 ? State::TrailerStart : State::Data;
        }
        break;
      case State::DataCr:
        state_ = c == '\r' ? State::DataLf : State::Failed;
        break;
      case State::DataLf:
        state_ = c == '\n' ? State::Size : State::Failed;
        break;
      case State::TrailerStart:
        if (c == '\r') {
          state_ = State::EndLf;
          break;
        }
        state_ = State::Trailer;
        [[fallthrough]];
      case State::Trailer:
        if (c == '\r') {
          state_ = State::TrailerLf;
        } else if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f ||
                   ++trailer_bytes_ > kMaxTrailerBytes) {
          state_ = State::Failed;
        }
        break;
      case State::TrailerLf:
        state_ = c == '\n' ? State::TrailerStart : State::Failed;
        break;
      case State::EndLf:
        state_ = c == '\n' ? State::Done : State::Failed;
        break;
      case State::Data:
      case State::Done:
      case State::Failed:
        break;
    }
  }
  return state_ == State::Failed ? 0 : i;
}

}  // namespace oarbank::proxy
