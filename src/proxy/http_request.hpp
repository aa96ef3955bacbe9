// The strict parser of the one request a client sends the proxy, and the head the proxy
// forwards upstream for a plain-HTTP request. Pure: no I/O, fuzzed by
// fuzz/proxy_request_fuzz.cpp.
//
// Accepted: "CONNECT host:port HTTP/1.x" (authority-form) and "METHOD http://authority/path
// HTTP/1.x" (absolute-form); origin-form ("GET /path") is parsed too, so that the forwarded
// head can be read back in tests, and the proxy refuses it. Refused (the status says which
// class): a bare CR or LF, obs-fold, whitespace before a colon, control characters, a head
// over the size limit (431), an HTTP version other than 1.0 and 1.1 (505), a transfer coding
// other than chunked (501), Content-Length with Transfer-Encoding, several Content-Length
// or Transfer-Encoding or Host fields, a Host that disagrees with the target, userinfo, a
// fragment, a Connection field naming Host, Content-Length or Transfer-Encoding, a body on
// CONNECT.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/destination_match.hpp"
#include "proxy/http_head.hpp"

namespace oarbank::proxy {

enum class RequestForm { Connect, Absolute, Origin };

struct HttpRequest {
  std::string method;
  RequestForm form = RequestForm::Origin;
  // Connect and Absolute: the destination. Origin: from the Host field, if any.
  std::optional<Target> target;
  std::string path;       // Absolute and Origin: the origin-form target ("/" at least)
  int minor_version = 1;  // HTTP/1.0 or HTTP/1.1
  std::vector<HeaderField> fields;
  std::vector<std::string> connection_names;  // the field names listed by Connection
  std::optional<std::uint64_t> content_length;
  bool chunked = false;  // Transfer-Encoding: chunked
};

struct RequestParse {
  enum class Status { Incomplete, Complete, Refused };
  Status status = Status::Incomplete;
  std::size_t head_bytes = 0;  // Complete: the head's length; bytes after it are body/tunnel data
  HttpRequest request;         // Complete
  int http_status = 0;         // Refused: 400, 431, 501 or 505
  std::string problem;         // Refused: why, for the client and the log
};

// Parses the head at the start of `received` (all bytes read so far). A head longer than
// `max_head_bytes` is refused with 431, without waiting for its end.
RequestParse parse_request_head(std::string_view received, std::size_t max_head_bytes);

// The head forwarded upstream for an absolute-form request: origin-form target, the same
// HTTP version, Host from the URI, end-to-end fields in their order, "Connection: close"
// (one upstream connection per request).
std::string forwarded_request_head(const HttpRequest& request);

}  // namespace oarbank::proxy
