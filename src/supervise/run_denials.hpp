// Issue 14: the denials of one sandbox-run, from every reader the node allows (docs/denials.md):
// the seccomp listener (refusals of the filter), and what each could not record.
#pragma once

#include <unistd.h>

#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "plan/denials.hpp"
#include "plan/plan.hpp"
#include "supervise/denial_audit.hpp"
#include "supervise/denial_listener.hpp"
#include "supervise/denial_table.hpp"

namespace oarbank {

class RunDenials {
 public:
  RunDenials(const seccomp::FilterVariant& variant, LandlockAdviceContext context)
      : seccomp_(variant, table_), audit_(table_, std::move(context)) {}

  // Before the spawn. Chooses the notifying filter for the plan where this kernel has user
  // notification (a kernel without it keeps the errno filter: the same refusals, unrecorded),
  // and Landlock's logging after the exec where the audit log can be read (the node's
  // denial_audit key).
  void prepare(Plan& plan, const std::string& denial_audit);
  // After the spawn, with the module's first process (the one that restricts itself) and, where
  // the module has a uid of its own, that uid (-1 where it is shared).
  // `module_leaf`: its cgroup leaf's directory (-1: none).
  void spawned(pid_t module_pid, std::int64_t module_uid = -1, std::int64_t module_gid = -1,
               int module_leaf = -1) noexcept {
    seccomp_.set_module_user(module_uid, module_gid, module_leaf);
    // The launcher made the run's Landlock domain with this process's real uid: sandbox-run
    // sets the module's only after restrict_self (apply/identity.hpp).
    audit_.start(module_pid, static_cast<std::int64_t>(::getuid()));
  }
  // After the run (the module's processes are gone): the last records read.
  void finish() { audit_.stop(); }
  [[nodiscard]] SeccompListener* seccomp_listener() { return &seccomp_; }
  // Adds a denial another reader found (the proxy's refusals).
  void add(const Denial& denial) { table_.add(denial); }

  // Session 20's real-programs review: a grant of a writable directory (work, temp, data) that
  // the next run would refuse by the directory rule ("owned by uid 6") is not proposed: its
  // grant is null (--learn skips it) and its reason says why. `check` answers that problem
  // for a grant of `key` (work, temp, data; runtime, session 21: one the module id's history
  // refuses) and a path ("" when none); `makes_entries`: the refused operation made, removed or
  // moved an entry of the directory (fs.make_*, fs.remove_*, fs.refer), which needs its write
  // bit.
  using GrantCheck = std::function<std::string(const std::string& key, const std::string& path,
                                               bool makes_entries)>;
  void check_writable_grants(GrantCheck check) { writable_check_ = std::move(check); }
  // Each path's answer is asked once and kept (it walks the path as the module's user, and
  // --result and stderr both read the list). From the supervisor's thread alone.
  [[nodiscard]] std::vector<Denial> denials() const;
  [[nodiscard]] DenialDiagnostics diagnostics() const;

 private:
  DenialTable table_;
  SeccompListener seccomp_;
  LandlockAuditReader audit_;
  GrantCheck writable_check_;
  mutable std::map<std::tuple<std::string, std::string, bool>, std::string> writable_problems_;
  bool notify_asked_ = false;
  std::string audit_unavailable_ = "not asked";
};

}  // namespace oarbank
