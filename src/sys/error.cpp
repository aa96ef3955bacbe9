#include "sys/error.hpp"

#include <fmt/format.h>

#include <cstring>

namespace oarbank {

int exit_code_for(ErrorKind kind) {
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
  return kExitSoftware;
}

std::string errno_text(int err) {
  const char* name = strerrorname_np(err);
  return fmt::format("{} ({})", name != nullptr ? name : std::to_string(err).c_str(),
                     std::strerror(err));
}

}  // namespace oarbank
