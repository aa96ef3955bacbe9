#include "proxy/http_head.hpp"

#include <algorithm>
#include <array>

namespace oarbank::proxy {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  static constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return kSpecials.find(c) != std::string_view::npos;
}

namespace {

// The framing fields whose names hold a '-'. CGI and WSGI turn both '-' and '_' into '_'
// (HTTP_TRANSFER_ENCODING), so behind such a server "Transfer_Encoding" frames the body
// although the proxy never read it as framing.
constexpr std::array<std::string_view, 2> kHyphenatedFraming = {"Content-Length",
                                                                "Transfer-Encoding"};

}  // namespace

std::string_view framing_name_like(std::string_view name) {
  for (std::string_view framing : kHyphenatedFraming) {
    if (name.size() != framing.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < name.size() && same; ++i) {
      char c = name[i] == '_' ? '-' : name[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      char f = framing[i];
      if (f >= 'A' && f <= 'Z') f = static_cast<char>(f - 'A' + 'a');
      same = c == f;
    }
    if (same) return framing;
  }
  return {};
}

bool is_framing_lookalike(std::string_view name) {
  return !framing_name_like(name).empty() && name.find('_') != std::string_view::npos;
}

HeadScan scan_head(std::string_view received, std::size_t& head_bytes) {
  if (received.starts_with("\r\n"))
    return HeadScan::Invalid;  // no empty line before the start line
  for (std::size_t i = 0; i < received.size(); ++i) {
    const char c = received[i];
    if (c == '\n') return HeadScan::Invalid;  // every LF is consumed with its CR below
    if (c != '\r') continue;
    if (i + 1 == received.size()) return HeadScan::Incomplete;
    if (received[i + 1] != '\n') return HeadScan::Invalid;  // bare CR
    // CRLF at i; an empty line follows it when the next two bytes are CRLF as well.
    if (i + 3 < received.size() && received[i + 2] == '\r' && received[i + 3] == '\n') {
      head_bytes = i + 4;
      return HeadScan::Complete;
    }
    ++i;
  }
  return HeadScan::Incomplete;
}

bool parse_field_line(std::string_view line, std::vector<HeaderField>& fields,
                      std::string& problem) {
  if (line.empty()) {
    problem = "an empty header line";
    return false;
  }
  if (line.front() == ' ' || line.front() == '\t') {
    problem = "obs-fold (a header line starting with whitespace) is refused";
    return false;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    problem = "a header line without a field name and colon";
    return false;
  }
  const std::string_view name = line.substr(0, colon);
  if (!std::all_of(name.begin(), name.end(), is_tchar)) {
    problem = "invalid header field name (whitespace before the colon is refused)";
    return false;
  }
  if (is_framing_lookalike(name)) {
    problem = "a field name that differs from " + std::string(framing_name_like(name)) +
              " only by '_' for '-' is refused";
    return false;
  }
  std::string_view value = line.substr(colon + 1);
  for (unsigned char c : value) {
    // CR and LF are control characters too: a line handed over with one inside is refused.
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      problem = "a control character in a header field value";
      return false;
    }
  }
  // llhttp refuses "Transfer-Encoding: chunked<HTAB>" (fuzz/proxy_llhttp_fuzz.cpp): a framing
  // field ending in a tab is refused here too, however RFC 9110 reads OWS.
  if (!value.empty() && value.back() == '\t' &&
      (iequals(name, "transfer-encoding") || iequals(name, "content-length"))) {
    problem = "a tab at the end of a framing field's value";
    return false;
  }
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (fields.size() == kMaxHeaderFields) {
    problem = "too many header fields";
    return false;
  }
  fields.push_back({std::string(name), std::string(value)});
  return true;
}

bool split_head(std::string_view head, std::string_view& first_line,
                std::vector<HeaderField>& fields, std::string& problem) {
  // `head` ends in CRLF CRLF and has no bare CR or LF (scan_head).
  std::size_t end = head.find("\r\n");
  first_line = head.substr(0, end);
  std::size_t pos = end + 2;
  while (pos + 2 <= head.size()) {
    end = head.find("\r\n", pos);
    const std::string_view line = head.substr(pos, end - pos);
    pos = end + 2;
    if (line.empty()) break;
    if (!parse_field_line(line, fields, problem)) return false;
  }
  return true;
}

bool is_fixed_hop_by_hop(std::string_view name) {
  static constexpr std::array<std::string_view, 8> kNames = {"connection",
                                                             "keep-alive",
                                                             "proxy-authenticate",
                                                             "proxy-authorization",
                                                             "proxy-connection",
                                                             "te",
                                                             "trailer",
                                                             "upgrade"};
  return std::any_of(kNames.begin(), kNames.end(),
                     [&](std::string_view n) { return iequals(n, name); });
}

bool connection_options(const std::vector<HeaderField>& fields, std::vector<std::string>& names,
                        std::string& problem) {
  for (const auto& field : fields) {
    if (!iequals(field.name, "connection")) continue;
    std::string_view rest = field.value;
    while (true) {
      const auto comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
      while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
      if (!item.empty()) {
        if (!std::all_of(item.begin(), item.end(), is_tchar)) {
          problem = "the Connection field is not a list of tokens";
          return false;
        }
        names.emplace_back(item);
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return true;
}

void append_end_to_end_fields(const std::vector<HeaderField>& fields,
                              const std::vector<std::string>& connection_names,
                              std::initializer_list<std::string_view> skip, std::string& out) {
  for (const auto& field : fields) {
    if (is_fixed_hop_by_hop(field.name)) continue;
    if (std::any_of(skip.begin(), skip.end(),
                    [&](std::string_view name) { return iequals(name, field.name); })) {
      continue;
    }
    const bool named = std::any_of(connection_names.begin(), connection_names.end(),
                                   [&](const std::string& n) { return iequals(n, field.name); });
    if (named) continue;
    out.append(field.name).append(": ").append(field.value).append("\r\n");
  }
}

}  // namespace oarbank::proxy
