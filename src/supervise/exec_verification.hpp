// The parent's check of "Verification" (https://docs.codonic.dev/oarbank/spec/sandbox-linux;
// pure): after the module's exec, /proc/<pid>/status must show what only the launcher sets
// before the exec.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "probe/proc_status.hpp"

namespace oarbank {

struct ExecExpectation {
  // When the launcher started as root it must have become the module user, with no
  // capabilities in any set; started unprivileged, the uid is the caller's.
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  // Root can empty the bounding set and the supplementary groups, and the launcher does; an
  // unprivileged caller cannot (CAP_SETPCAP), so then only the other sets must be empty.
  bool privileged_launch = true;
  // Filters already on sandbox-run (a container runtime's): the launcher's own must stack on
  // top, or "Seccomp: 2" would only show the inherited one.
  int inherited_seccomp_filters = 0;
};

// nullopt when the process is sandboxed as expected, else the first field that is not, as
// "Seccomp: 0 (expected 2)".
std::optional<std::string> exec_verification_problem(const ProcStatus& status,
                                                     const ExecExpectation& expected);

}  // namespace oarbank
