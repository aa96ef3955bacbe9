#include "proxy/proxy_log.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

namespace oarbank::proxy {
namespace {

// RFC 3339, UTC, milliseconds.
std::string now_text() {
  const auto now = std::chrono::system_clock::now();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return text;
}

nlohmann::json text_or_null(const std::string& text) {
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

// Client-controlled text (a method, a host) reaches the log: invalid UTF-8 is replaced, so
// every line stays valid JSON.
std::string dump(const nlohmann::json& line) {
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string decision_line(const DecisionRecord& r) {
  nlohmann::json line = {
      {"time", now_text()},
      {"event", "decision"},
      {"module", r.module},
      {"client", r.client},
      {"method", text_or_null(r.method)},
      {"destination", text_or_null(r.destination)},
      {"addresses", r.addresses},
      {"verdict", r.allowed ? "allow" : "refuse"},
      {"status", r.allowed ? nlohmann::json(nullptr) : nlohmann::json(r.status)},
      {"reason", r.reason},
  };
  return dump(line);
}

std::string closed_line(const ClosedRecord& r) {
  nlohmann::json line = {
      {"time", now_text()},
      {"event", "closed"},
      {"module", r.module},
      {"client", r.client},
      {"method", r.method},
      {"destination", r.destination},
      {"address", text_or_null(r.address)},
      {"bytes_up", r.bytes_up},
      {"bytes_down", r.bytes_down},
      {"duration_ms", r.duration_ms},
      {"outcome", r.outcome},
      {"status", r.status == 0 ? nlohmann::json(nullptr) : nlohmann::json(r.status)},
      {"upstream_status",
       r.upstream_status ? nlohmann::json(*r.upstream_status) : nlohmann::json(nullptr)},
      {"reason", r.reason},
  };
  return dump(line);
}

void ProxyLog::write(const std::string& line) {
  if (sink_) {
    sink_(line);
    return;
  }
  std::string with_newline = line + "\n";  // one write: lines from several threads stay whole
  std::fwrite(with_newline.data(), 1, with_newline.size(), stderr);
}

}  // namespace oarbank::proxy
