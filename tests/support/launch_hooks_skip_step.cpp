// Linked into oarbank-agent-skipstep only (tests/CMakeLists.txt), never into oarbank-agent:
// a launcher that skips the step named by OARBANK_TEST_SKIP_STEP (its name in
// plan/launch_steps.hpp: identity or seccomp), to prove that sandbox-run
// refuses what it then sees in /proc/<pid>/status.
#include <cstdlib>

#include "apply/launch_hooks.hpp"

namespace oarbank {

bool launch_test_skips(LaunchStep step) {
  const char* skip = std::getenv("OARBANK_TEST_SKIP_STEP");
  return skip != nullptr && step_name(step) == skip;
}

}  // namespace oarbank
