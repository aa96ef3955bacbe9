#include "proxy/proxy_summary.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace oarbank::proxy {
namespace {

std::string text_field(const nlohmann::json& line, const char* key, std::string_view absent) {
  const auto it = line.find(key);
  if (it == line.end() || !it->is_string() || it->get<std::string>().empty())
    return std::string(absent);
  return it->get<std::string>();
}

}  // namespace

std::optional<std::string> proxy_refusal_summary(std::string_view json_line, bool first) {
  const auto line = nlohmann::json::parse(json_line, nullptr, false);
  if (!line.is_object()) return std::nullopt;
  if (text_field(line, "event", "") != "decision" || text_field(line, "verdict", "") != "refuse")
    return std::nullopt;
  const auto status = line.find("status");
  std::string text = fmt::format(
      "egress proxy refused {} {} ({}): {}", text_field(line, "method", "a request"),
      text_field(line, "destination", "(no destination)"),
      status != line.end() && status->is_number_integer() ? std::to_string(status->get<int>())
                                                          : "no answer",
      text_field(line, "reason", "no reason given"));
  if (const auto repeated = line.find("repeated");
      repeated != line.end() && repeated->is_number_unsigned()) {
    text += fmt::format(" (repeated {} times in a second)", repeated->get<std::uint64_t>());
  }
  if (first)
    text += " (one line per refusal on a terminal; --proxy-log FILE keeps every JSON line)";
  // A destination or method is the client's text: shown printable, as print_error does.
  std::string printable;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      printable += static_cast<char>(c);
    } else {
      printable += fmt::format("\\x{:02x}", c);
    }
  }
  return printable;
}

}  // namespace oarbank::proxy
