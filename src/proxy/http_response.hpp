// The upstream's response head, rewritten for the client: hop-by-hop fields dropped, and
// "Connection: close" added unless the client's connection is kept for its next request. How
// the body that follows is framed (RFC 9112 section 6.3) says where the response ends, and so
// whether the client's connection can carry another request after it. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace oarbank::proxy {

// Largest response head the proxy reads from an upstream.
inline constexpr std::size_t kMaxResponseHeadBytes = 64 * 1024;

// How a response body is delimited.
enum class BodyFraming {
  None,       // no body: a response to HEAD, 1xx, 204, 304
  Length,     // Content-Length
  Chunked,    // Transfer-Encoding: chunked (and no Content-Length)
  UntilClose  // anything else: the body ends when the upstream closes
};

// What the proxy knows of the request the response answers.
struct ResponseContext {
  bool head_request = false;  // the request was HEAD: the response has no body
  // The client's connection may carry another request (HTTP/1.1, no "Connection: close", the
  // request body wholly read): then a response with a known end keeps it open.
  bool client_keep_alive = false;
};

struct ResponseParse {
  enum class Status { Incomplete, Complete, Invalid };
  Status status = Status::Incomplete;
  std::size_t head_bytes = 0;  // Complete: the received head's length
  int status_code = 0;         // Complete: 100-599
  bool interim = false;        // Complete: a 1xx response; the final head follows it
  std::string rewritten;       // Complete: the head to send to the client
  BodyFraming body = BodyFraming::UntilClose;  // Complete, final: how the body ends
  std::uint64_t content_length = 0;            // BodyFraming::Length: the body's size
  bool keep_alive = false;  // Complete, final: the client's connection stays open after it
  std::string problem;      // Invalid: why (the client gets 502)
};

ResponseParse parse_response_head(std::string_view received, std::size_t max_head_bytes,
                                  const ResponseContext& context = {});

}  // namespace oarbank::proxy
