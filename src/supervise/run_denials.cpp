#include "supervise/run_denials.hpp"

namespace oarbank {

void RunDenials::prepare(Plan& plan) {
  notify_asked_ = seccomp_user_notification_available();
  plan.seccomp_notify = notify_asked_;
}

DenialDiagnostics RunDenials::diagnostics() const {
  DenialDiagnostics d;
  if (seccomp_.served()) {
    d.syscalls = "recorded";
  } else if (!notify_asked_) {
    d.syscalls = "unavailable: the kernel has no seccomp user notification (Linux 5.0)";
  } else {
    d.syscalls =
        "unavailable: the module's filter listener was not received (no exec, or no "
        "thread to answer it)";
  }
  d.filesystem = "unavailable: not recorded by this build (Landlock audit, docs/denials.md)";
  d.network = d.filesystem;
  d.dropped = table_.dropped();
  return d;
}

}  // namespace oarbank
