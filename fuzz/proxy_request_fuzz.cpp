// libFuzzer target for the egress proxy's pure parsers: the request head (and the head it
// forwards), the upstream's response head, the chunked body tracker, authorities and address
// classification. The first byte picks the parser; the rest is its input. Besides crashes and
// sanitizer reports, it traps on a broken invariant:
//   - a complete request head is complete at the same length when read alone, and incomplete
//     one byte shorter (the proxy never sees a head end where another reader would not);
//   - the forwarded head reads back (strictly) as an origin-form request for the same
//     destination and framing, with no hop-by-hop field;
//   - a rewritten response head reads back with the same status;
//   - the chunked tracker gives the same answer however the stream is split;
//   - a parsed authority prints and re-parses to itself, and an accepted IP literal is one
//     that inet_pton reads the same way.
#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "proxy/address_class.hpp"
#include "proxy/chunked_body.hpp"
#include "proxy/destination_match.hpp"
#include "proxy/http_head.hpp"
#include "proxy/http_request.hpp"
#include "proxy/http_response.hpp"

namespace {

using namespace oarbank::proxy;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void fuzz_request(std::string_view text) {
  constexpr std::size_t kMax = 4096;
  const RequestParse parse = parse_request_head(text, kMax);
  if (parse.status == RequestParse::Status::Refused) {
    check(parse.http_status >= 400 && parse.http_status < 600 && !parse.problem.empty());
    return;
  }
  if (parse.status != RequestParse::Status::Complete) return;
  check(parse.head_bytes <= text.size() && parse.head_bytes <= kMax);
  check(parse_request_head(text.substr(0, parse.head_bytes), kMax).status ==
        RequestParse::Status::Complete);
  check(parse_request_head(text.substr(0, parse.head_bytes - 1), kMax).status ==
        RequestParse::Status::Incomplete);
  const HttpRequest& request = parse.request;
  check(!(request.content_length && request.chunked));
  for (const auto& field : request.fields) {
    check(field.value.find_first_of("\r\n") == std::string::npos);
  }
  if (request.form == RequestForm::Origin) return;
  check(request.target.has_value() && request.target->port != 0);
  if (request.form == RequestForm::Connect) {
    check(!request.chunked && request.content_length.value_or(0) == 0);
    return;
  }
  const std::string forwarded = forwarded_request_head(request);
  // The forwarded head adds Host and Connection: it may hold two fields more than the
  // parser's own limit, which only bounds what clients send.
  if (request.fields.size() + 2 > kMaxHeaderFields) return;
  const RequestParse back = parse_request_head(forwarded, 1 << 20);
  check(back.status == RequestParse::Status::Complete && back.head_bytes == forwarded.size());
  check(back.request.form == RequestForm::Origin);
  check(back.request.target == request.target);
  check(back.request.method == request.method && back.request.path == request.path);
  check(back.request.content_length == request.content_length &&
        back.request.chunked == request.chunked);
  int connection_fields = 0;
  for (const auto& field : back.request.fields) {
    if (iequals(field.name, "connection")) {
      ++connection_fields;
      check(field.value == "close");
      continue;
    }
    check(!is_fixed_hop_by_hop(field.name));
    for (const auto& named : request.connection_names) check(!iequals(named, field.name));
  }
  check(connection_fields == 1);
}

void fuzz_response(std::string_view text) {
  const ResponseParse parse = parse_response_head(text, 4096);
  if (parse.status != ResponseParse::Status::Complete) return;
  check(parse.status_code >= 100 && parse.status_code <= 599 && parse.status_code != 101);
  // "Connection: close" is added: a head at the field limit rewrites to one field more.
  std::size_t lines = 0;
  for (std::size_t at = parse.rewritten.find("\r\n"); at != std::string::npos;
       at = parse.rewritten.find("\r\n", at + 2)) {
    ++lines;
  }
  if (lines - 2 > kMaxHeaderFields) return;
  const ResponseParse back = parse_response_head(parse.rewritten, 1 << 20);
  check(back.status == ResponseParse::Status::Complete &&
        back.head_bytes == parse.rewritten.size());
  check(back.status_code == parse.status_code);
  check(back.rewritten == parse.rewritten);  // idempotent
}

void fuzz_chunked(std::string_view data) {
  if (data.empty()) return;
  const std::size_t split_seed = static_cast<unsigned char>(data[0]);
  data.remove_prefix(1);
  ChunkedBodyTracker whole;
  const ChunkedStep whole_step = whole.consume(data);
  check(whole_step.taken <= data.size() && whole_step.forward <= whole_step.taken);
  ChunkedBodyTracker pieces;
  std::size_t taken = 0;
  std::string relayed;  // what goes upstream when the body arrives in pieces
  std::size_t pos = 0;
  std::size_t step = split_seed % 7 + 1;
  while (pos < data.size() && !pieces.done() && !pieces.failed()) {
    const std::size_t n = std::min(step, data.size() - pos);
    const ChunkedStep got = pieces.consume(data.substr(pos, n));
    check(got.taken <= n && got.forward <= got.taken);
    relayed.append(data.substr(pos, got.forward));
    taken += got.taken;
    if (got.taken < n) break;
    pos += n;
    step = step * 3 % 11 + 1;
  }
  check(whole.done() == pieces.done());
  check(whole.failed() == pieces.failed());
  if (whole.done()) {
    check(whole_step.taken == taken);
    // However the bytes arrive, the upstream gets the same body: the chunks as received, then
    // the trailers in canonical form, which a second pass leaves as they are.
    check(relayed == data.substr(0, whole_step.forward));
    check(whole.trailer_section() == pieces.trailer_section());
    const std::string body = relayed + whole.trailer_section();
    ChunkedBodyTracker again;
    const ChunkedStep again_step = again.consume(body);
    check(again.done() && again_step.taken == body.size());
    check(again.trailer_section() == whole.trailer_section());
  }
}

void fuzz_authority(std::string_view text) {
  std::string problem;
  const auto target = parse_authority(text, 0, problem);
  if (!target) {
    check(!problem.empty());
    return;
  }
  std::string again_problem;
  const auto again = parse_authority(target->authority(), 0, again_problem);
  check(again.has_value() && *again == *target);
  if (target->ip) {
    unsigned char bytes[16] = {};
    check(inet_pton(target->ip->v6 ? AF_INET6 : AF_INET, target->host.c_str(), bytes) == 1);
    check(std::memcmp(bytes, target->ip->bytes.data(), target->ip->v6 ? 16 : 4) == 0);
    std::string reason;
    AddressContext context;
    (void)address_permitted(*target->ip, context, reason);
    (void)classify_address(*target->ip, {});
  } else {
    for (char c : target->host)
      check((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.');
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      fuzz_request(text);
      break;
    case 1:
      fuzz_response(text);
      break;
    case 2:
      fuzz_chunked(text);
      break;
    default:
      fuzz_authority(text);
      break;
  }
  return 0;
}
