// The proxy's structured log: one JSON object per line, one line per decision and one per
// closed connection that was allowed. Field reference: docs/proxy.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proxy/proxy_settings.hpp"

namespace oarbank::proxy {

struct DecisionRecord {
  std::string module;
  std::string client;                  // the client's address:port
  std::string method;                  // "" when the head could not be read
  std::string destination;             // "host:port", "" when there is none
  std::vector<std::string> addresses;  // what the name resolved to, or the literal
  bool allowed = false;
  int status = 0;  // the status the proxy answered with when refused
  std::string reason;
};

struct ClosedRecord {
  std::string module;
  std::string client;
  std::string method;
  std::string destination;
  std::string address;                 // "ip:port" connected to, "" when no connection was made
  std::uint64_t bytes_up = 0;          // written to the upstream
  std::uint64_t bytes_down = 0;        // written to the client (after the proxy's own 200)
  std::uint64_t duration_ms = 0;       // from accept to close
  std::string outcome;                 // "closed", "reset", "idle timeout", "connect failed", ...
  int status = 0;                      // a status the proxy answered with itself (502, 504), else 0
  std::optional<int> upstream_status;  // forwarded requests: the upstream's final status
  std::string reason;                  // detail, e.g. the connect error
};

std::string decision_line(const DecisionRecord& record);
std::string closed_line(const ClosedRecord& record);

// Writes lines to a sink, or to stderr when the sink is empty.
class ProxyLog {
 public:
  explicit ProxyLog(LogSink sink) : sink_(std::move(sink)) {}
  void decision(const DecisionRecord& record) { write(decision_line(record)); }
  void closed(const ClosedRecord& record) { write(closed_line(record)); }

 private:
  void write(const std::string& line);
  LogSink sink_;
};

}  // namespace oarbank::proxy
