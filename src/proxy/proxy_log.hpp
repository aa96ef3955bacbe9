// The proxy's structured log: one JSON object per line, one line per decision and one per
// closed connection that was allowed. Field reference: docs/proxy.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
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

// `repeated`: above 0, the line stands for that many records like it ("repeated": N; a closed
// line's bytes are then their sums, its duration the longest).
std::string decision_line(const DecisionRecord& record, std::uint64_t repeated = 0);
std::string closed_line(const ClosedRecord& record, std::uint64_t repeated = 0);

// Repeated identical refusals (attack review): a module refused in a loop (2,000 a second, the
// accept pacing's most) would write a line each, about 500 KB of log a second. A refusal
// (same module, method, destination, status and reason) is logged the first time; the same
// one again within the second after is only counted, and when that second is over the count
// is one line, "repeated": N, the last of them as its record. A key still refused then stays
// counted second by second (one line a second); one not refused in a whole second is
// forgotten (its next refusal is logged at once). Pure: the caller gives the time.
// Attack review (session 15): refusals that differ (a new destination each) were a line each,
// 3000 lines and 1 MB of log in 1.4 s from one module. Past kDistinctPerWindow distinct
// refusals of one module in a second, its others are folded into one count of their own,
// written as the last of them with "repeated": N and a reason that says they were folded.
// Session 18's attack review: allowed connections to a destination that was down wrote two
// lines each (the allowed decision, the failed close), about 0.5 MB a second. Allowed
// decisions and closed connections (`logged_per_window` above 0) are each a line of their own
// up to that many of one module in a second, an audit trail of every connection; past it they
// are counted and folded as refusals are (each destination's first still a line, its repeats
// counted: a closed line's bytes then summed).
template <class Record>
class LineRepeats {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kWindow = std::chrono::seconds(1);
  static constexpr std::size_t kDistinctPerWindow = 20;
  struct Repeat {
    Record record;  // the last one counted (a closed one: bytes summed, the longest duration)
    std::uint64_t count = 0;
  };
  // `kind` names the records in a folded line's reason ("refusals"); `logged_per_window`: 0,
  // identical ones counted from the second on; N, the first N of a module each second logged
  // whatever they are, the rest folded.
  explicit LineRepeats(std::string kind = "refusals", std::size_t logged_per_window = 0)
      : kind_(std::move(kind)), logged_per_window_(logged_per_window) {}
  // True: log `record` now; false: it was counted. Ask due(now) first.
  bool admit(const Record& record, Clock::time_point now);
  // The counts whose second is over at `now` (each above 0), oldest key first.
  std::vector<Repeat> due(Clock::time_point now);
  // Every count still open (the log ends).
  std::vector<Repeat> flush();
  // Whether any record is remembered (a count open, or a second not over).
  [[nodiscard]] bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    Clock::time_point start;
    Repeat repeat;
  };
  struct ModuleWindow {
    Clock::time_point start;
    std::size_t logged = 0;    // records logged within the budget (logged_per_window) this second
    std::size_t distinct = 0;  // keys logged at once past it this second
  };
  void fold(const Record& record, Clock::time_point now, const std::string& past);
  std::string kind_;
  std::size_t logged_per_window_ = 0;
  std::map<std::string, Entry> entries_;
  std::map<std::string, ModuleWindow> modules_;
};
using RefusalRepeats = LineRepeats<DecisionRecord>;
using ClosedRepeats = LineRepeats<ClosedRecord>;

// Writes lines to a sink, or to stderr when the sink is empty; repeated lines as counts
// (LineRepeats), written once their second is over (the server's timer calls write_due()).
// flush() writes the counts still open: the proxy's loop calls it when it ends
// (ProxyServer::run, on its own thread, while whoever the sink writes to is still there), so
// every refusal is in the log by the time the proxy has stopped.
class ProxyLog {
 public:
  explicit ProxyLog(LogSink sink) : sink_(std::move(sink)) {}
  ProxyLog(const ProxyLog&) = delete;
  ProxyLog& operator=(const ProxyLog&) = delete;
  void decision(const DecisionRecord& record);
  void closed(const ClosedRecord& record);
  // The counts whose second is over, written now; true while records are still remembered
  // (the server's timer asks again a second later).
  bool write_due();
  void flush();
  // Called (on the logging thread) when a record was counted instead of written: the server
  // arms its timer, so that the count is written when its second is over.
  void on_counted(std::function<void()> hook) { on_counted_ = std::move(hook); }

 private:
  void write_due(RefusalRepeats::Clock::time_point now);
  void write(const std::string& line);
  LogSink sink_;
  std::function<void()> on_counted_;
  std::mutex mutex_;  // the three below
  // An allowed connection's two lines: up to kLoggedPerWindow of a module's each second.
  static constexpr std::size_t kLoggedPerWindow = 100;
  RefusalRepeats refusals_{"refusals"};
  RefusalRepeats allowed_{"allowed connections", kLoggedPerWindow};
  ClosedRepeats closed_{"closed connections", kLoggedPerWindow};
};

}  // namespace oarbank::proxy
