// One small error type for the whole project. Only main() maps a kind to an exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace oarbank {

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
// status") give them.
inline constexpr int kExitUsage = 64;
inline constexpr int kExitSoftware = 70;
inline constexpr int kExitOsErr = 71;
inline constexpr int kExitConfig = 78;
inline constexpr int kExitUnavailable = 69;
inline constexpr int kExitTempFail = 75;
// sandbox-run --timeout: the module ran out of time (as timeout(1) says it).
inline constexpr int kExitTimedOut = 124;

int exit_code_for(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message, int err = 0)
      : std::runtime_error(message), kind_(kind), errno_(err) {}
  [[nodiscard]] ErrorKind kind() const { return kind_; }
  [[nodiscard]] int error_number() const { return errno_; }

 private:
  ErrorKind kind_;
  int errno_;
};

// "EACCES (Permission denied)": errno name and text, for one-line messages.
std::string errno_text(int err);

}  // namespace oarbank
