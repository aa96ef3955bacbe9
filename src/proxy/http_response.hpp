// The upstream's response head, rewritten for the client: hop-by-hop fields dropped and
// "Connection: close" added (the proxy relays one request per connection). The body that
// follows is relayed untouched, framing included, until the upstream closes. Pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace oarbank::proxy {

// Largest response head the proxy reads from an upstream.
inline constexpr std::size_t kMaxResponseHeadBytes = 64 * 1024;

struct ResponseParse {
  enum class Status { Incomplete, Complete, Invalid };
  Status status = Status::Incomplete;
  std::size_t head_bytes = 0;  // Complete: the received head's length
  int status_code = 0;         // Complete: 100-599
  bool interim = false;        // Complete: a 1xx response; the final head follows it
  std::string rewritten;       // Complete: the head to send to the client
  std::string problem;         // Invalid: why (the client gets 502)
};

ResponseParse parse_response_head(std::string_view received, std::size_t max_head_bytes);

}  // namespace oarbank::proxy
