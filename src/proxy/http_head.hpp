// The syntax shared by request and response heads (RFC 9112 section 2 and 5), read strictly:
// every line ends in CRLF (a bare CR or LF is refused, not repaired), no obs-fold, field
// names are tokens with the colon right after them, field values hold no control character
// but HTAB. Refusing instead of repairing is what keeps the proxy and the upstream server
// from reading one message two ways (request smuggling).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace oarbank::proxy {

struct HeaderField {
  std::string name;   // as received; compare with iequals
  std::string value;  // without leading and trailing whitespace
};

// Most header fields accepted in one head.
inline constexpr std::size_t kMaxHeaderFields = 128;

bool iequals(std::string_view a, std::string_view b);
bool is_tchar(char c);

enum class HeadScan { Incomplete, Complete, Invalid };

// Looks for the end of a head in `received` (the bytes so far). Complete: `head_bytes` is
// the length through the empty line. Invalid: a bare CR or LF, or a head that starts with an
// empty line. Incomplete: more bytes are needed (the caller bounds the size).
HeadScan scan_head(std::string_view received, std::size_t& head_bytes);

// "Content-Length" or "Transfer-Encoding" when `name` equals one of them once every '_' is read
// as '-' (any case), else empty.
std::string_view framing_name_like(std::string_view name);
// A name that differs from Content-Length or Transfer-Encoding only by '_' in place of '-'
// ("Transfer_Encoding"): refused in heads and trailers, never forwarded.
bool is_framing_lookalike(std::string_view name);

// One field line (without its CRLF), the grammar of heads and trailers alike: a token name,
// the colon right after it, a value without control characters but HTAB, no obs-fold, no
// framing look-alike name. Appends the field; false with `problem` otherwise, or when
// `fields` already holds kMaxHeaderFields.
bool parse_field_line(std::string_view line, std::vector<HeaderField>& fields,
                      std::string& problem);

// Splits a complete head into its first line and fields. False with `problem` on a syntax
// error (obs-fold, a bad name or value, too many fields).
bool split_head(std::string_view head, std::string_view& first_line,
                std::vector<HeaderField>& fields, std::string& problem);

// The hop-by-hop fields (RFC 9110 section 7.6.1) a proxy never forwards: Connection,
// Keep-Alive, Proxy-Authenticate, Proxy-Authorization, Proxy-Connection, TE, Trailer,
// Upgrade, and those named in Connection. Transfer-Encoding is not in the list: the proxy
// relays bodies byte for byte, framing included, so the upstream must see how they are framed.
bool is_fixed_hop_by_hop(std::string_view name);

// The field names listed by the Connection fields. False with `problem` when a value is not
// a comma-separated list of tokens.
bool connection_options(const std::vector<HeaderField>& fields, std::vector<std::string>& names,
                        std::string& problem);

// Appends the end-to-end fields (neither hop-by-hop nor named in `connection_names`, nor
// named in `skip`) to `out` as "Name: value\r\n".
void append_end_to_end_fields(const std::vector<HeaderField>& fields,
                              const std::vector<std::string>& connection_names,
                              std::initializer_list<std::string_view> skip, std::string& out);

}  // namespace oarbank::proxy
