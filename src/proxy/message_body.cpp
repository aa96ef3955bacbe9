#include "proxy/message_body.hpp"

#include <algorithm>

namespace oarbank::proxy {

MessageBody MessageBody::length(std::uint64_t bytes) {
  MessageBody body;
  body.remaining_ = bytes;
  body.done_ = bytes == 0;
  return body;
}

MessageBody MessageBody::chunked() {
  MessageBody body;
  body.chunked_.emplace();
  body.done_ = false;
  return body;
}

MessageBody MessageBody::until_close() {
  MessageBody body;
  body.until_close_ = true;
  body.done_ = false;
  return body;
}

ChunkedStep MessageBody::take(std::string_view data) {
  if (done_) return {};
  if (until_close_) return {data.size(), data.size()};
  if (chunked_) {
    const ChunkedStep step = chunked_->consume(data);
    done_ = chunked_->done();
    return step;
  }
  const auto taken = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, data.size()));
  remaining_ -= taken;
  done_ = remaining_ == 0;
  return {taken, taken};
}

std::string MessageBody::tail() const {
  return done_ && chunked_ ? chunked_->trailer_section() : std::string();
}

}  // namespace oarbank::proxy
