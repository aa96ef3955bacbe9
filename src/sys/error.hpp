// The project's one error convention (docs/architecture.md, "Errors"). Before the first
// irreversible step (plan/launch_steps.hpp) a failure is thrown as an Error: a kind, the step
// it belongs to (optional), the errno (0: none) and where (a JSON Pointer or a path,
// optional). Policy and configuration errors are Errors too (PolicyError, ConfigError: the
// same fields), so one catch handles all. After it nothing throws: a step returns false and
// fills a StepError. exit_code_for is the only place a kind becomes an exit code.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace oarbank {

// Defined with its list in plan/launch_steps.hpp; declared here so that an Error can name its
// step without this layer depending on the plan.
enum class LaunchStep : std::uint8_t;

enum class ErrorKind {
  Usage,          // 64: bad command line
  InvalidPolicy,  // 64: the policy is not a valid Policy
  Config,         // 78: the node's configuration is invalid
  Unenforceable,  // 70: the policy needs what this node cannot enforce, or a path is missing
  StepFailed,     // 70: a launch step could not be applied in full
  ExecFailed,     // 71: execve of the module failed
  Internal,       // 70: anything else: fail closed
  NotFound,       // 69: sandbox-ctl: no module runs with that id
  Busy,           // 75: sandbox-run: a live run already holds that module id
};

// sysexits(3) codes, as docs/launcher.md ("Exit codes") and docs/sandbox-run.md ("Exit
// status") give them. Code maps a kind through exit_code_for; the names stay for it and for
// the documented statuses (124).
inline constexpr int kExitUsage = 64;
inline constexpr int kExitSoftware = 70;
inline constexpr int kExitOsErr = 71;
inline constexpr int kExitConfig = 78;
inline constexpr int kExitUnavailable = 69;
inline constexpr int kExitTempFail = 75;
// sandbox-run --timeout: the module ran out of time (as timeout(1) says it). Not a kind: a
// documented status of its own (contract.md).
inline constexpr int kExitTimedOut = 124;

// The one mapping from a kind to an exit code (contract.md's table). constexpr, so that a
// status line can be built at compile time for a child that must not allocate.
constexpr int exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Usage:
    case ErrorKind::InvalidPolicy:
      return kExitUsage;
    case ErrorKind::Config:
      return kExitConfig;
    case ErrorKind::NotFound:
      return kExitUnavailable;
    case ErrorKind::Busy:
      return kExitTempFail;
    case ErrorKind::ExecFailed:
      return kExitOsErr;
    case ErrorKind::Unenforceable:
    case ErrorKind::StepFailed:
    case ErrorKind::Internal:
      return kExitSoftware;
  }
  return kExitSoftware;  // fail closed
}

class Error : public std::runtime_error {
 public:
  // what() is `message` as given: one line, naming what failed and where.
  Error(ErrorKind kind, const std::string& message, int err = 0)
      : std::runtime_error(message), kind_(kind), errno_(err) {}
  // The full form: the step it belongs to (plan/launch_steps.hpp's step_error builds the
  // "step X failed: ..." message for one) and where (a JSON Pointer or a path; "" none).
  Error(ErrorKind kind, std::optional<LaunchStep> step, std::string where,
        const std::string& message, int err = 0)
      : std::runtime_error(message),
        kind_(kind),
        errno_(err),
        step_(step),
        where_(std::move(where)) {}
  [[nodiscard]] ErrorKind kind() const { return kind_; }
  [[nodiscard]] int error_number() const { return errno_; }
  [[nodiscard]] std::optional<LaunchStep> step() const { return step_; }
  [[nodiscard]] const std::string& where() const { return where_; }

 private:
  ErrorKind kind_;
  int errno_;
  std::optional<LaunchStep> step_;
  std::string where_;
};

// After the first irreversible step nothing throws: a step returns false and fills this.
// The launcher prints it as "step NAME failed: WHAT: ERRNO", or `what` alone where
// `complete` (a message that names its cause and fix itself).
struct StepError {
  std::string what;  // which call, on what
  int err = 0;
  bool complete = false;
};

// "EACCES (Permission denied)": errno name and text, for one-line messages.
std::string errno_text(int err);

}  // namespace oarbank
