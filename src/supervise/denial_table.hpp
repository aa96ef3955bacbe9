// The denials of one run, as sandbox-run's supervisor collects them from its readers (the
// seccomp listener, the audit reader, the proxy's log): deduplicated, and bounded so that a
// module cannot grow the supervisor's memory by being refused many different things. Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "plan/denials.hpp"

namespace oarbank {

class DenialTable {
 public:
  explicit DenialTable(std::size_t capacity = 256) : capacity_(capacity) {}

  // Counts one more of `denial` (its count added to a record of the same key), or counts it
  // dropped when the table holds `capacity` other records already.
  void add(const Denial& denial);
  [[nodiscard]] std::vector<Denial> denials() const;  // in the order first seen
  [[nodiscard]] std::uint64_t dropped() const;

 private:
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<Denial> records_;
  std::map<std::string, std::size_t> index_;
  std::uint64_t dropped_ = 0;
};

}  // namespace oarbank
