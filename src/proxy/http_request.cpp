#include "proxy/http_request.hpp"

#include <algorithm>
#include <charconv>

namespace oarbank::proxy {
namespace {

bool is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// RFC 3986 characters of a path and query: unreserved, sub-delims, ":", "@", "/", "?", and
// "%" with two hex digits. No fragment, no space, nothing outside ASCII.
bool valid_path_and_query(std::string_view text) {
  static constexpr std::string_view kAllowed =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/?";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size() || !is_hex_digit(text[i + 1]) || !is_hex_digit(text[i + 2]))
        return false;
      i += 2;
    } else if (kAllowed.find(c) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

RequestParse refuse(int status, std::string problem) {
  RequestParse out;
  out.status = RequestParse::Status::Refused;
  out.http_status = status;
  out.problem = std::move(problem);
  return out;
}

const HeaderField* single_field(const std::vector<HeaderField>& fields, std::string_view name,
                                bool& duplicated) {
  const HeaderField* found = nullptr;
  duplicated = false;
  for (const auto& field : fields) {
    if (!iequals(field.name, name)) continue;
    if (found) duplicated = true;
    found = &field;
  }
  return found;
}

// Parses the absolute-form "http://authority[/path][?query]".
bool parse_absolute_uri(std::string_view uri, HttpRequest& request, int& status,
                        std::string& problem) {
  status = 400;
  constexpr std::string_view kHttp = "http://";
  if (uri.size() < kHttp.size() || !iequals(uri.substr(0, kHttp.size()), kHttp)) {
    problem = uri.size() >= 8 && iequals(uri.substr(0, 8), "https://")
                  ? "https URLs go through CONNECT"
                  : "only http:// URLs are forwarded";
    return false;
  }
  uri.remove_prefix(kHttp.size());
  if (uri.find('#') != std::string_view::npos) {
    problem = "a fragment in the request target";
    return false;
  }
  const auto path_start = uri.find_first_of("/?");
  const std::string_view authority = uri.substr(0, path_start);
  std::string_view path = path_start == std::string_view::npos ? "" : uri.substr(path_start);
  auto target = parse_authority(authority, 80, problem);
  if (!target) return false;
  if (!valid_path_and_query(path)) {
    problem = "invalid characters in the request target";
    return false;
  }
  request.target = std::move(target);
  request.path = path.empty() || path.front() == '?' ? "/" + std::string(path) : std::string(path);
  return true;
}

}  // namespace

RequestParse parse_request_head(std::string_view received, std::size_t max_head_bytes) {
  std::size_t head_bytes = 0;
  const HeadScan scan =
      scan_head(received.substr(0, std::min(received.size(), max_head_bytes)), head_bytes);
  if (scan == HeadScan::Invalid) return refuse(400, "a bare CR or LF, or an empty first line");
  if (scan == HeadScan::Incomplete) {
    if (received.size() >= max_head_bytes) return refuse(431, "request head too large");
    return {};
  }
  const std::string_view head = received.substr(0, head_bytes);
  std::string_view line;
  HttpRequest request;
  std::string problem;
  if (!split_head(head, line, request.fields, problem)) return refuse(400, problem);

  // request-line = method SP request-target SP HTTP-version, single spaces.
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return refuse(400, "malformed request line");
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (method.empty() || !std::all_of(method.begin(), method.end(), is_tchar)) {
    return refuse(400, "malformed method");
  }
  // RFC 9113 section 11.1: PRI starts the HTTP/2 connection preface and is never a request.
  if (method == "PRI") return refuse(400, "PRI is the HTTP/2 connection preface, not a request");
  if (target.empty()) return refuse(400, "empty request target");
  for (unsigned char c : target) {
    if (c <= 0x20 || c >= 0x7f) return refuse(400, "invalid characters in the request target");
  }
  if (version == "HTTP/1.1") {
    request.minor_version = 1;
  } else if (version == "HTTP/1.0") {
    request.minor_version = 0;
  } else if (version.size() == 8 && version.starts_with("HTTP/") && version[5] >= '0' &&
             version[5] <= '9' && version[6] == '.' && version[7] >= '0' && version[7] <= '9') {
    return refuse(505, "only HTTP/1.0 and HTTP/1.1 are spoken");
  } else {
    return refuse(400, "malformed HTTP version");
  }
  request.method = method;

  int status = 400;
  if (method == "CONNECT") {
    request.form = RequestForm::Connect;
    auto authority = parse_authority(target, 0, problem);
    if (!authority) return refuse(400, "CONNECT target: " + problem);
    request.target = std::move(authority);
  } else if (target.front() == '/') {
    request.form = RequestForm::Origin;
    if (!valid_path_and_query(target) || target.find('#') != std::string_view::npos) {
      return refuse(400, "invalid characters in the request target");
    }
    request.path = target;
  } else {
    request.form = RequestForm::Absolute;
    if (!parse_absolute_uri(target, request, status, problem)) return refuse(status, problem);
  }

  // Host: at most one. In absolute form and CONNECT the target is the destination and Host is
  // ignored, then replaced by the target's authority (RFC 9112 section 3.2.2): Node's proxy
  // idiom sends the proxy's own address there. In origin form it names the destination.
  bool duplicated = false;
  const HeaderField* host = single_field(request.fields, "host", duplicated);
  if (duplicated) return refuse(400, "several Host fields");
  if (host && request.form == RequestForm::Origin) {
    auto named = parse_authority(host->value, 80, problem);
    if (!named) return refuse(400, "Host field: " + problem);
    request.target = std::move(named);
  }

  // Framing: Content-Length xor Transfer-Encoding: chunked, each at most once.
  const HeaderField* length = single_field(request.fields, "content-length", duplicated);
  if (duplicated) return refuse(400, "several Content-Length fields");
  const HeaderField* coding = single_field(request.fields, "transfer-encoding", duplicated);
  if (duplicated) return refuse(400, "several Transfer-Encoding fields");
  if (length && coding) return refuse(400, "both Content-Length and Transfer-Encoding");
  if (length) {
    const std::string& v = length->value;
    std::uint64_t n = 0;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || v.size() > 18 || ec != std::errc() || ptr != v.data() + v.size()) {
      return refuse(400, "Content-Length is not a decimal number");
    }
    request.content_length = n;
  }
  if (coding) {
    if (request.minor_version == 0) return refuse(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (!iequals(coding->value, "chunked"))
      return refuse(501, "only the chunked transfer coding is relayed");
    request.chunked = true;
  }
  if (request.form == RequestForm::Connect &&
      (request.chunked || (request.content_length && *request.content_length != 0))) {
    return refuse(400, "a CONNECT request carries no body");
  }

  if (!connection_options(request.fields, request.connection_names, problem))
    return refuse(400, problem);
  for (const auto& name : request.connection_names) {
    // Dropping these while relaying the body by them would let the upstream frame it
    // differently: the classic smuggling trick.
    if (iequals(name, "host") || iequals(name, "content-length") ||
        iequals(name, "transfer-encoding")) {
      return refuse(400, "the Connection field names " + name);
    }
  }
  RequestParse out;
  out.status = RequestParse::Status::Complete;
  out.head_bytes = head_bytes;
  out.request = std::move(request);
  return out;
}

std::string forwarded_request_head(const HttpRequest& request) {
  std::string out;
  out.reserve(256);
  out.append(request.method).append(" ").append(request.path);
  out.append(request.minor_version == 0 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n");
  out.append("Host: ").append(request.target->host_header(80)).append("\r\n");
  // The framing fields in canonical form ("Content-Length: 05" goes on as 5): the upstream
  // reads exactly the framing the proxy judged, whatever its parser makes of odd spellings.
  append_end_to_end_fields(request.fields, request.connection_names,
                           {"host", "content-length", "transfer-encoding"}, out);
  if (request.chunked) {
    out.append("Transfer-Encoding: chunked\r\n");
  } else if (request.content_length) {
    out.append("Content-Length: ").append(std::to_string(*request.content_length)).append("\r\n");
  }
  out.append("Connection: close\r\n\r\n");
  return out;
}

}  // namespace oarbank::proxy
