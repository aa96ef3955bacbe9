// A seam for one test only: sandbox-run's verification must refuse a launcher that skipped a
// step. The production binary links launch_hooks_production.cpp, where no step is ever
// skipped and nothing (no option, no variable, no configuration key) can change that; the
// test-only launcher binary links tests/support/launch_hooks_skip_step.cpp instead.
#pragma once

#include "plan/launch_steps.hpp"

namespace oarbank {

// Asked by the identity step (of its setresuid part) and by the seccomp step.
bool launch_test_skips(LaunchStep step);

}  // namespace oarbank
