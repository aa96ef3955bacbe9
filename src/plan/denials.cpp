#include "plan/denials.hpp"

#include <fmt/format.h>

#include <string_view>

namespace oarbank {

std::string Denial::key() const {
  return mechanism + '\0' + operation + '\0' + object + '\0' + executable;
}

namespace {

// The length of the valid UTF-8 sequence at TEXT[AT] (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0.
std::size_t utf8_sequence(const std::string& text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (byte(at + i) < 0x80 || byte(at + i) > 0xBF) return 0;
  }
  return length;
}

// Session 21's attack review: a module chooses the bytes of a path it is refused (4,096 each,
// up to the table's 256 records: 4 MB on stderr and 5 MB of result from one run). What is shown
// of an object or an executable is at most this many bytes of it.
constexpr std::size_t kShownBytes = 512;

// TEXT cut to kShownBytes at a character's start, with its length said; else TEXT.
std::string shown(const std::string& text) {
  if (text.size() <= kShownBytes) return text;
  std::size_t end = kShownBytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end) + fmt::format("... ({} bytes)", text.size());
}

// Whether TEXT holds what the refusal line uses to separate its parts (the attack review's
// "/data by /usr/bin/python3 (pid 1), once: harmless probe; allowed by ..." read as the line's
// own advice): such a name is written quoted, with its quotes escaped.
bool reads_as_line(const std::string& text) {
  for (const char* part : {", ", "; ", ": ", " by ", " (", "\""}) {
    if (text.find(part) != std::string::npos) return true;
  }
  return false;
}

std::string in_line(const std::string& text) {
  const std::string cut = shown(text);
  return reads_as_line(cut) ? fmt::format("{:?}", cut) : cut;
}

}  // namespace

std::string utf8_or_escaped(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = utf8_sequence(text, at);
    if (length == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[at]));
      ++at;
    } else {
      out.append(text, at, length);
      at += length;
    }
  }
  return out;
}

nlohmann::json denials_to_json(const std::vector<Denial>& denials) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& d : denials) {
    const std::string object = utf8_or_escaped(shown(d.object));
    const std::string executable = utf8_or_escaped(shown(d.executable));
    // A grant names the object (a path to add): one whose bytes were escaped (or cut) names
    // another path; and a grant's own path is shown whole, so only one of a length shown.
    const bool exact = object == d.object && executable == d.executable &&
                       d.grant.dump().size() <= 2 * kShownBytes;
    list.push_back({{"mechanism", d.mechanism},
                    {"operation", d.operation},
                    {"object", object},
                    {"error", d.error},
                    {"pid", d.pid > 0 ? nlohmann::json(d.pid) : nlohmann::json(nullptr)},
                    {"executable",
                     d.executable.empty() ? nlohmann::json(nullptr) : nlohmann::json(executable)},
                    {"count", d.count},
                    {"allowed_by", d.allowed_by.empty() || !exact
                                       ? nlohmann::json(nullptr)
                                       : nlohmann::json(utf8_or_escaped(d.allowed_by))},
                    {"reason", utf8_or_escaped(d.reason)},
                    {"grant", exact ? d.grant : nlohmann::json(nullptr)}});
  }
  return list;
}

nlohmann::json diagnostics_to_json(const DenialDiagnostics& diagnostics) {
  return {{"syscalls", diagnostics.syscalls},
          {"filesystem", diagnostics.filesystem},
          {"network", diagnostics.network},
          {"dropped", diagnostics.dropped}};
}

std::string denial_line(const Denial& d) {
  std::string who = d.executable.empty() ? std::string() : " by " + in_line(d.executable);
  if (d.pid > 0) who += fmt::format(" (pid {})", d.pid);
  const std::string times = d.count == 1 ? "once" : fmt::format("{} times", d.count);
  const std::string object = d.object.empty() ? std::string() : " " + in_line(d.object);
  if (!d.allowed_by.empty()) {
    return fmt::format("refused ({}): {}{}{}, {}: {}; {}", d.mechanism, d.operation, object, who,
                       times, d.reason, d.allowed_by);
  }
  return fmt::format("refused ({}): {}{}{}, {}: no policy allows it: {}", d.mechanism, d.operation,
                     object, who, times, d.reason);
}

bool line_names_path(const std::string& line, const std::string& path) {
  if (path.empty()) return false;
  constexpr std::string_view kAround = " ,;:()\"'";
  for (auto at = line.find(path); at != std::string::npos; at = line.find(path, at + 1)) {
    const std::size_t end = at + path.size();
    const bool starts = at == 0 || kAround.find(line[at - 1]) != std::string_view::npos;
    const bool ends = end == line.size() || kAround.find(line[end]) != std::string_view::npos;
    if (starts && ends) return true;
  }
  return false;
}

std::string apply_grant(nlohmann::json& policy, const nlohmann::json& grant) {
  if (!grant.is_object() || !grant.contains("key") || !grant["key"].is_string()) return "";
  const std::string key = grant["key"].get<std::string>();
  if (grant.contains("set")) {
    const nlohmann::json before = policy.contains(key) ? policy[key] : nlohmann::json(nullptr);
    if (before == grant["set"]) return "";
    policy[key] = grant["set"];
    return fmt::format("\"{}\": {} -> {}", key,
                       before.is_null() ? "(unset)" : before.dump(-1, ' ', true),
                       grant["set"].dump(-1, ' ', true));
  }
  if (grant.contains("add")) {
    nlohmann::json& list = policy[key];
    if (list.is_null()) list = nlohmann::json::array();
    if (!list.is_array()) return "";
    for (const auto& item : list) {
      if (item == grant["add"]) return "";
    }
    list.push_back(grant["add"]);
    // ASCII only: the line reaches the operator's terminal, and a path a module was refused
    // may hold C1 control characters (U+0080-U+009F) that JSON leaves as they are.
    return fmt::format("+ \"{}\": {}", key, grant["add"].dump(-1, ' ', true));
  }
  return "";
}

}  // namespace oarbank
