// Issue 11: the list of what a launch makes before the launcher's steps
// (apply/before_launch.hpp). Each entry belongs to a step the supervisor's setup names, before
// the spawn and reversible (a failure there is one line and 70, nothing run), and a bare
// sandbox-exec, sandbox-run or both run it; the network's entry is there once. What each entry
// makes is tested for real in tests/integration/network_test.cpp (a bare sandbox-exec's relay).
#include "apply/before_launch.hpp"

#include <gtest/gtest.h>

namespace oarbank {
namespace {

TEST(BeforeLaunch, EachEntryIsASetupStepBeforeTheSpawn) {
  ASSERT_FALSE(before_launch_setups().empty());
  for (const BeforeLaunch& setup : before_launch_setups()) {
    SCOPED_TRACE(std::string(step_name(setup.step)));
    const StepInfo& info = step_info(setup.step);
    EXPECT_EQ(info.runner, StepRunner::Supervisor);
    EXPECT_FALSE(info.irreversible);
    EXPECT_LT(static_cast<int>(setup.step), static_cast<int>(LaunchStep::Spawn));
    EXPECT_TRUE(setup.bare_exec != nullptr || setup.module_run != nullptr);
  }
}

// sandbox-run makes the module's namespace in its own step (make_network: the child joins
// it, the proxy listens in it), a bare sandbox-exec through the list.
TEST(BeforeLaunch, TheNetworkEntryIsABareSandboxExecs) {
  for (const BeforeLaunch& setup : before_launch_setups()) {
    if (setup.step != LaunchStep::Network) continue;
    EXPECT_NE(setup.bare_exec, nullptr);
    EXPECT_EQ(setup.module_run, nullptr);
  }
}

TEST(BeforeLaunch, TheNetworkHasOneEntry) {
  int network = 0;
  for (const BeforeLaunch& setup : before_launch_setups()) {
    network += setup.step == LaunchStep::Network ? 1 : 0;
  }
  EXPECT_EQ(network, 1);
}

}  // namespace
}  // namespace oarbank
