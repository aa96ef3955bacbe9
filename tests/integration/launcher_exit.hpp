// The exit-code tests' fixture (exit_codes_test.cpp), shared with the mechanisms' own test
// files (network_test.cpp): a suite that spans two files needs one fixture class, so
// LauncherExit and Unenforceable live here, outside any anonymous namespace.
#pragma once

#include <string>
#include <vector>

#include "sandbox_fixture.hpp"

namespace oarbank::it {

// Runs the launcher with a raw argument list (after "oarbank-agent"), the fixture's env.
class LauncherExit : public UncappedTest {
 protected:
  RunResult agent(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {OARBANK_AGENT_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions run;
    run.env = launcher_environment();
    return run_command(argv, run);
  }
  // Nothing the payload could have made, and nothing the launcher left, in the writable dirs.
  void expect_nothing_ran() {
    for (const char* dir : {"work", "temp", "data0", "data1"}) {
      EXPECT_EQ(list_dir(tree.path(dir)), std::vector<std::string>{}) << dir;
    }
  }
  std::string marker() const { return tree.path("work/ran"); }
};

// --- 70: the node cannot enforce the policy (the suite's tests: exit_codes_test.cpp, and a
// mechanism's own refusals in its file, network_test.cpp's EgressAny).
class Unenforceable : public LauncherExit {};

}  // namespace oarbank::it
