// Differential fuzzing of the egress proxy's request framing against llhttp (Node's HTTP
// parser, strict by default and hardened by years of smuggling reports; Debian's node-llhttp
// ships its C sources). The proxy keeps its own parsers (docs/proxy.md says why); this target
// shows they are at least as strict where it matters:
//
// 1. A request the proxy accepts whole (head and body) llhttp accepts too, and ends at the same
//    byte: the proxy and an llhttp-based upstream agree where the message ends.
// 2. Where the proxy still waits for bytes, llhttp has not ended the message either.
// 3. What the proxy sends upstream for an absolute-form request (its rewritten head, the body,
//    the canonical trailers) is exactly one complete message to llhttp, ending at its last byte.
//
// A method llhttp does not know as an HTTP method (it has a fixed list, and reads RTSP's and
// ICE's differently) is not a finding: the proxy relays any token as a method, and an upstream
// that does not know it answers with an error, no second message. Such inputs are skipped.
#include <llhttp.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>

#include "proxy/http_request.hpp"
#include "proxy/message_body.hpp"

namespace {

using namespace oarbank::proxy;

// The methods llhttp parses as HTTP (HTTP_METHOD_MAP; not RTSP_METHOD_MAP's).
bool llhttp_http_method(std::string_view bytes) {
#define OARBANK_METHOD_NAME(num, name, string) #string,
  static const std::unordered_set<std::string_view> kMethods = {
      HTTP_METHOD_MAP(OARBANK_METHOD_NAME)};
#undef OARBANK_METHOD_NAME
  const auto space = bytes.find(' ');
  return space != std::string_view::npos && kMethods.count(bytes.substr(0, space)) == 1;
}

void check(bool ok) {
  if (!ok) __builtin_trap();
}

struct Framing {
  enum class Kind { Complete, Incomplete, Refused };
  Kind kind = Kind::Incomplete;
  std::size_t end = 0;            // Complete: the message's length
  llhttp_errno_t error = HPE_OK;  // llhttp, Refused: why
};

int on_message_complete(llhttp_t* parser) {
  *static_cast<bool*>(parser->data) = true;
  return HPE_PAUSED;  // stop at the end of the first message
}

Framing llhttp_framing(std::string_view bytes) {
  llhttp_settings_t settings;
  llhttp_settings_init(&settings);
  settings.on_message_complete = on_message_complete;
  llhttp_t parser;
  llhttp_init(&parser, HTTP_REQUEST, &settings);
  bool complete = false;
  parser.data = &complete;
  const llhttp_errno_t error = llhttp_execute(&parser, bytes.data(), bytes.size());
  Framing out;
  if (complete) {
    out.kind = Framing::Kind::Complete;
    out.end = static_cast<std::size_t>(llhttp_get_error_pos(&parser) - bytes.data());
  } else if (error == HPE_OK) {
    out.kind = Framing::Kind::Incomplete;
  } else {
    out.kind = Framing::Kind::Refused;
    out.error = error;
  }
  return out;
}

// The proxy's framing of `bytes`, and what it would forward for an absolute-form request.
Framing proxy_framing(std::string_view bytes, std::string& forwarded) {
  Framing out;
  const RequestParse parse = parse_request_head(bytes, 1 << 16);
  if (parse.status == RequestParse::Status::Refused) out.kind = Framing::Kind::Refused;
  if (parse.status != RequestParse::Status::Complete) return out;
  const HttpRequest& request = parse.request;
  if (request.form == RequestForm::Connect) {
    // A tunnel follows the head: llhttp ends the message there too (an upgrade).
    out.kind = Framing::Kind::Complete;
    out.end = parse.head_bytes;
    return out;
  }
  MessageBody body = request.chunked ? MessageBody::chunked()
                                     : MessageBody::length(request.content_length.value_or(0));
  const std::string_view rest = bytes.substr(parse.head_bytes);
  const ChunkedStep step = body.take(rest);
  if (body.failed()) {
    out.kind = Framing::Kind::Refused;
    return out;
  }
  if (!body.done()) return out;
  out.kind = Framing::Kind::Complete;
  out.end = parse.head_bytes + step.taken;
  if (request.form == RequestForm::Absolute) {
    forwarded = forwarded_request_head(request);
    forwarded.append(rest.substr(0, step.forward)).append(body.tail());
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::string forwarded;
  const Framing ours = proxy_framing(bytes, forwarded);
  if (!llhttp_http_method(bytes)) return 0;
  const Framing theirs = llhttp_framing(bytes);
  if (ours.kind == Framing::Kind::Complete) {
    // 1: accepted by the proxy, so accepted by llhttp, ending at the same byte.
    check(theirs.kind == Framing::Kind::Complete);
    check(theirs.end == ours.end);
  } else if (ours.kind == Framing::Kind::Incomplete) {
    // 2: llhttp may refuse early what the proxy would refuse later, but not end it sooner.
    check(theirs.kind != Framing::Kind::Complete);
  }
  if (!forwarded.empty()) {
    // 3: the upstream reads one message, all of it.
    const Framing upstream = llhttp_framing(forwarded);
    check(upstream.kind == Framing::Kind::Complete && upstream.end == forwarded.size());
  }
  return 0;
}
