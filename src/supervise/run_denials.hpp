// Issue 14: the denials of one sandbox-run, from every reader the node allows (docs/denials.md):
// the seccomp listener (refusals of the filter), and what each could not record.
#pragma once

#include <vector>

#include "plan/denials.hpp"
#include "plan/plan.hpp"
#include "supervise/denial_listener.hpp"
#include "supervise/denial_table.hpp"

namespace oarbank {

class RunDenials {
 public:
  explicit RunDenials(const seccomp::FilterVariant& variant) : seccomp_(variant, table_) {}

  // Chooses the notifying filter for the plan where this kernel has user notification; a
  // kernel without it keeps the errno filter (the same refusals, unrecorded).
  void prepare(Plan& plan);
  [[nodiscard]] SeccompListener* seccomp_listener() { return &seccomp_; }
  // Adds a denial another reader found (the proxy's refusals).
  void add(const Denial& denial) { table_.add(denial); }

  [[nodiscard]] std::vector<Denial> denials() const { return table_.denials(); }
  [[nodiscard]] DenialDiagnostics diagnostics() const;

 private:
  DenialTable table_;
  SeccompListener seccomp_;
  bool notify_asked_ = false;
};

}  // namespace oarbank
