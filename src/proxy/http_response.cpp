#include "proxy/http_response.hpp"

#include <vector>

#include "proxy/http_head.hpp"

namespace oarbank::proxy {
namespace {

ResponseParse invalid(std::string problem) {
  ResponseParse out;
  out.status = ResponseParse::Status::Invalid;
  out.problem = std::move(problem);
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

ResponseParse parse_response_head(std::string_view received, std::size_t max_head_bytes) {
  std::size_t head_bytes = 0;
  const std::string_view window = received.substr(0, std::min(received.size(), max_head_bytes));
  const HeadScan scan = scan_head(window, head_bytes);
  if (scan == HeadScan::Invalid) return invalid("upstream response head has a bare CR or LF");
  if (scan == HeadScan::Incomplete) {
    if (received.size() >= max_head_bytes) return invalid("upstream response head too large");
    return {};
  }
  std::string_view line;
  std::vector<HeaderField> fields;
  std::string problem;
  if (!split_head(received.substr(0, head_bytes), line, fields, problem)) {
    return invalid("upstream response head: " + problem);
  }
  // status-line = HTTP-version SP 3DIGIT SP [reason-phrase]; the SP after the code is
  // tolerated missing when the reason is empty.
  if (line.size() < 12 || !(line.starts_with("HTTP/1.1 ") || line.starts_with("HTTP/1.0 ")) ||
      !is_digit(line[9]) || !is_digit(line[10]) || !is_digit(line[11]) ||
      (line.size() > 12 && line[12] != ' ')) {
    return invalid("malformed upstream status line");
  }
  for (unsigned char c : line) {
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return invalid("control character in the upstream status line");
  }
  const int code = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  if (code < 100 || code > 599) return invalid("upstream status code out of range");
  // The proxy stripped Upgrade from the request: switching protocols was never asked for.
  if (code == 101) return invalid("upstream switched protocols, which the proxy did not ask for");
  std::vector<std::string> names;
  if (!connection_options(fields, names, problem)) return invalid("upstream response: " + problem);

  ResponseParse out;
  out.status = ResponseParse::Status::Complete;
  out.head_bytes = head_bytes;
  out.status_code = code;
  out.interim = code < 200;
  out.rewritten.reserve(head_bytes + 32);
  out.rewritten.append(line).append("\r\n");
  append_end_to_end_fields(fields, names, {}, out.rewritten);
  if (!out.interim) out.rewritten.append("Connection: close\r\n");
  out.rewritten.append("\r\n");
  return out;
}

}  // namespace oarbank::proxy
