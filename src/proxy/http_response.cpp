#include "proxy/http_response.hpp"

#include <algorithm>
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

// RFC 9112 section 6.3, read so that any doubt ends the body at the upstream's close (the
// proxy then closes the client's connection too, and no later request can be misframed).
BodyFraming body_framing(const std::vector<HeaderField>& fields, int code, bool head_request,
                         std::uint64_t& content_length) {
  if (head_request || code < 200 || code == 204 || code == 304) return BodyFraming::None;
  const HeaderField* length = nullptr;
  const HeaderField* coding = nullptr;
  int lengths = 0;
  int codings = 0;
  for (const auto& field : fields) {
    if (iequals(field.name, "content-length")) {
      length = &field;
      ++lengths;
    } else if (iequals(field.name, "transfer-encoding")) {
      coding = &field;
      ++codings;
    }
  }
  if (codings > 0) {
    return codings == 1 && lengths == 0 && iequals(coding->value, "chunked")
               ? BodyFraming::Chunked
               : BodyFraming::UntilClose;
  }
  if (lengths != 1) return BodyFraming::UntilClose;
  const std::string& v = length->value;
  if (v.empty() || v.size() > 18 || !std::all_of(v.begin(), v.end(), is_digit)) {
    return BodyFraming::UntilClose;
  }
  content_length = std::stoull(v);
  return BodyFraming::Length;
}

}  // namespace

ResponseParse parse_response_head(std::string_view received, std::size_t max_head_bytes,
                                  const ResponseContext& context) {
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
  if (!out.interim) {
    out.body = body_framing(fields, code, context.head_request, out.content_length);
    // An HTTP/1.0 status line would tell the client the connection ends with the response.
    out.keep_alive = context.client_keep_alive && out.body != BodyFraming::UntilClose &&
                     line.starts_with("HTTP/1.1 ");
  }
  out.rewritten.reserve(head_bytes + 32);
  out.rewritten.append(line).append("\r\n");
  append_end_to_end_fields(fields, names, {}, out.rewritten);
  if (!out.interim && !out.keep_alive) out.rewritten.append("Connection: close\r\n");
  out.rewritten.append("\r\n");
  return out;
}

}  // namespace oarbank::proxy
