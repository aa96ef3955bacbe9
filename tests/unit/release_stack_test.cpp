// Issue 11: what one sandbox-run makes is released in reverse order of acquisition, once, on
// every path (src/supervise/release_stack.hpp). Pure: no root, no kernel.
#include "supervise/release_stack.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "plan/launch_steps.hpp"

namespace oarbank {
namespace {

// What the module run makes, in its order (module_run.cpp): the record, the leaf, the module's
// own proxy port (port only), the directories, the network namespace, the proxy, the terminal.
const std::vector<LaunchStep> kAcquisitions = {
    LaunchStep::RunState, LaunchStep::Cgroup, LaunchStep::Network, LaunchStep::Directories,
    LaunchStep::Network,  LaunchStep::Proxy,  LaunchStep::Terminal};

std::vector<std::string> names_of(const std::vector<LaunchStep>& steps) {
  std::vector<std::string> names;
  for (LaunchStep step : steps) names.emplace_back(step_name(step));
  return names;
}

// A run whose acquisition `failing` throws (none: all succeed), as ModuleRun::run is written:
// each thing pushed right after it is made. Returns what was released, in order.
std::vector<std::string> run_failing_at(std::size_t failing) {
  std::vector<std::string> released;
  try {
    ReleaseStack held;
    for (std::size_t i = 0; i < kAcquisitions.size(); ++i) {
      const std::string name(step_name(kAcquisitions[i]));
      if (i == failing) throw std::runtime_error("step " + name + " failed");
      held.push(name, [&released, name] { released.push_back(name); });
    }
  } catch (const std::runtime_error&) {
  }
  return released;
}

TEST(ReleaseStack, AFailureAtEachAcquisitionReleasesExactlyTheEarlierOnesInReverse) {
  const std::vector<std::string> all = names_of(kAcquisitions);
  for (std::size_t failing = 0; failing <= all.size(); ++failing) {
    SCOPED_TRACE("failing at " + std::to_string(failing));
    std::vector<std::string> expected(all.rbegin() + static_cast<long>(all.size() - failing),
                                      all.rend());
    EXPECT_EQ(run_failing_at(failing), expected);
  }
  // Nothing made: nothing released. Everything made: all of it, the record last.
  EXPECT_TRUE(run_failing_at(0).empty());
  EXPECT_EQ(run_failing_at(all.size()).back(), "run-state");
  EXPECT_EQ(run_failing_at(all.size()).front(), "terminal");
}

TEST(ReleaseStack, TheEndOfARunReleasesAllButTheRecordThenTheRecord) {
  std::vector<std::string> released;
  ReleaseStack held;
  for (LaunchStep step : kAcquisitions) {
    const std::string name(step_name(step));
    held.push(name, [&released, name] { released.push_back(name); });
  }
  held.release_above(1);
  EXPECT_EQ(released, (std::vector<std::string>{"terminal", "proxy", "network", "directories",
                                                "network", "cgroup"}));
  EXPECT_EQ(held.names(), std::vector<std::string>{"run-state"});
  released.clear();
  held.release_above(0);
  EXPECT_EQ(released, std::vector<std::string>{"run-state"});
  EXPECT_EQ(held.size(), 0U);
  held.release_above(0);  // once: a second release does nothing
  EXPECT_EQ(released.size(), 1U);
}

TEST(ReleaseStack, KeptEntriesAreNotReleasedButKeepTheirPlace) {
  std::vector<std::string> released;
  {
    ReleaseStack held;
    held.push("a", [&] { released.push_back("a"); });
    const std::size_t dirs = held.push("directories", [&] { released.push_back("directories"); });
    held.push("b", [&] { released.push_back("b"); });
    held.keep(dirs);  // the module ran: its directories are its data
    EXPECT_EQ(held.names(), (std::vector<std::string>{"a", "directories", "b"}));
  }
  EXPECT_EQ(released, (std::vector<std::string>{"b", "a"}));
}

TEST(ReleaseStack, AReleaseThatThrowsDoesNotStopTheOthersAndRunsOnce) {
  std::vector<std::string> released;
  int throwing_calls = 0;
  ReleaseStack held;
  held.push("first", [&] { released.push_back("first"); });
  held.push("throws", [&] {
    ++throwing_calls;
    throw std::runtime_error("rmdir failed");
  });
  held.push("last", [&] { released.push_back("last"); });
  EXPECT_THROW(held.release_above(0), std::runtime_error);
  EXPECT_EQ(released, (std::vector<std::string>{"last", "first"}));
  EXPECT_EQ(throwing_calls, 1);
  EXPECT_EQ(held.size(), 0U);
  held.release_above(0);
  EXPECT_EQ(throwing_calls, 1);
}

TEST(ReleaseStack, TheDestructorReleasesWhatIsLeftAndSwallowsAThrow) {
  std::vector<std::string> released;
  {
    ReleaseStack held;
    held.push("first", [&] { released.push_back("first"); });
    held.push("throws", [] { throw std::runtime_error("x"); });
    held.push("last", [&] { released.push_back("last"); });
  }
  EXPECT_EQ(released, (std::vector<std::string>{"last", "first"}));
}

}  // namespace
}  // namespace oarbank
