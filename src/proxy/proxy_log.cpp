#include "proxy/proxy_log.hpp"

#include <algorithm>
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

std::string decision_line(const DecisionRecord& r, std::uint64_t repeated) {
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
  if (repeated > 0) line["repeated"] = repeated;
  return dump(line);
}

std::string closed_line(const ClosedRecord& r, std::uint64_t repeated) {
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
  if (repeated > 0) line["repeated"] = repeated;
  return dump(line);
}

namespace {
// Each field's length first: no two keys run together.
std::string key_of(std::initializer_list<const std::string*> fields) {
  std::string key;
  for (const std::string* field : fields) key += std::to_string(field->size()) + ":" + *field;
  return key;
}

// What makes two decisions the same: everything but the client's port and the time (the
// addresses follow from the destination).
std::string repeat_key(const DecisionRecord& r) {
  return key_of({&r.module, &r.method, &r.destination, &r.reason}) + std::to_string(r.status);
}

// Two closed connections: the same but for the client's port, the bytes and the duration.
std::string repeat_key(const ClosedRecord& r) {
  return key_of({&r.module, &r.method, &r.destination, &r.address, &r.outcome, &r.reason}) +
         std::to_string(r.status) + "/" +
         (r.upstream_status ? std::to_string(*r.upstream_status) : std::string("-"));
}

// A record counted into `into` (the last one stands for them all; a closed connection's bytes
// are summed, its duration the longest).
void absorb(DecisionRecord& into, const DecisionRecord& next) { into = next; }
void absorb(ClosedRecord& into, const ClosedRecord& next) {
  const std::uint64_t up = into.bytes_up + next.bytes_up;
  const std::uint64_t down = into.bytes_down + next.bytes_down;
  const std::uint64_t longest = std::max(into.duration_ms, next.duration_ms);
  into = next;
  into.bytes_up = up;
  into.bytes_down = down;
  into.duration_ms = longest;
}
}  // namespace

template <class Record>
void LineRepeats<Record>::fold(const Record& record, Clock::time_point now,
                               const std::string& past) {
  // One count a module, whatever the destination ("fold:" cannot begin a repeat_key, which
  // begins with a length).
  Record folded = record;
  folded.reason = "folded with the other " + kind_ + " of this module past " + past +
                  " a second; the last: " + record.reason;
  const std::string fold_key = "fold:" + std::to_string(record.module.size()) + ":" + record.module;
  auto fold = entries_.find(fold_key);
  if (fold == entries_.end()) {
    entries_.emplace(fold_key, Entry{now, Repeat{std::move(folded), 1}});
  } else {
    absorb(fold->second.repeat.record, folded);
    ++fold->second.repeat.count;
  }
}

template <class Record>
bool LineRepeats<Record>::admit(const Record& record, Clock::time_point now) {
  ModuleWindow& window = modules_[record.module];
  if ((window.logged == 0 && window.distinct == 0) || now - window.start >= kWindow) {
    window = ModuleWindow{now, 0, 0};
  }
  // Each its own line up to the module's budget for the second (allowed connections).
  if (window.logged < logged_per_window_) {
    ++window.logged;
    return true;
  }
  // Then as refusals: each key's first logged, its repeats counted; past kDistinctPerWindow
  // keys, the module's others folded (review of session 18's diff: one fold for every
  // destination hid which ones the module chose past the budget).
  const std::string key = repeat_key(record);
  auto it = entries_.find(key);
  // due(now) was asked first: an entry still here is within its second.
  if (it == entries_.end()) {
    if (window.distinct >= kDistinctPerWindow) {
      fold(record, now, std::to_string(kDistinctPerWindow) + " distinct ones");
      return false;
    }
    ++window.distinct;
    entries_.emplace(key, Entry{now, Repeat{{}, 0}});
    return true;
  }
  if (it->second.repeat.count == 0) {
    it->second.repeat.record = record;
  } else {
    absorb(it->second.repeat.record, record);
  }
  ++it->second.repeat.count;
  return false;
}

template <class Record>
std::vector<typename LineRepeats<Record>::Repeat> LineRepeats<Record>::due(Clock::time_point now) {
  std::vector<Repeat> out;
  std::erase_if(modules_, [&](const auto& module) { return now - module.second.start >= kWindow; });
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (now - it->second.start < kWindow) {
      ++it;
      continue;
    }
    if (it->second.repeat.count == 0) {
      it = entries_.erase(it);  // refused once in its second: forgotten
      continue;
    }
    out.push_back(std::move(it->second.repeat));
    // Still refused: the next second counts on, from the end of this one.
    it->second =
        Entry{it->second.start + kWindow * ((now - it->second.start) / kWindow), Repeat{{}, 0}};
    ++it;
  }
  return out;
}

template <class Record>
std::vector<typename LineRepeats<Record>::Repeat> LineRepeats<Record>::flush() {
  std::vector<Repeat> out;
  for (auto& [key, entry] : entries_) {
    if (entry.repeat.count > 0) out.push_back(std::move(entry.repeat));
  }
  entries_.clear();
  modules_.clear();
  return out;
}

template class LineRepeats<DecisionRecord>;
template class LineRepeats<ClosedRecord>;

namespace {
// The lines of `repeats`' counts, appended to `lines`.
void add_count_lines(std::vector<std::string>& lines,
                     const std::vector<RefusalRepeats::Repeat>& repeats) {
  for (const auto& repeat : repeats) lines.push_back(decision_line(repeat.record, repeat.count));
}
void add_count_lines(std::vector<std::string>& lines,
                     const std::vector<ClosedRepeats::Repeat>& repeats) {
  for (const auto& repeat : repeats) lines.push_back(closed_line(repeat.record, repeat.count));
}
}  // namespace

void ProxyLog::flush() {
  std::vector<std::string> lines;
  {
    std::lock_guard lock(mutex_);
    add_count_lines(lines, refusals_.flush());
    add_count_lines(lines, allowed_.flush());
    add_count_lines(lines, closed_.flush());
  }
  for (const auto& line : lines) write(line);
}

void ProxyLog::write_due(RefusalRepeats::Clock::time_point now) {
  std::vector<std::string> lines;
  {
    std::lock_guard lock(mutex_);
    add_count_lines(lines, refusals_.due(now));
    add_count_lines(lines, allowed_.due(now));
    add_count_lines(lines, closed_.due(now));
  }
  for (const auto& line : lines) write(line);
}

bool ProxyLog::write_due() {
  write_due(RefusalRepeats::Clock::now());
  std::lock_guard lock(mutex_);
  return !refusals_.empty() || !allowed_.empty() || !closed_.empty();
}

void ProxyLog::decision(const DecisionRecord& record) {
  const auto now = RefusalRepeats::Clock::now();
  write_due(now);
  bool counted = false;
  {
    std::lock_guard lock(mutex_);
    counted = !(record.allowed ? allowed_ : refusals_).admit(record, now);
  }
  if (counted) {
    if (on_counted_) on_counted_();
    return;
  }
  write(decision_line(record));
}

void ProxyLog::closed(const ClosedRecord& record) {
  const auto now = RefusalRepeats::Clock::now();
  write_due(now);
  bool counted = false;
  {
    std::lock_guard lock(mutex_);
    counted = !closed_.admit(record, now);
  }
  if (counted) {
    if (on_counted_) on_counted_();
    return;
  }
  write(closed_line(record));
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
