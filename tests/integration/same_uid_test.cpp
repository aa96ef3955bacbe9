// Every module runs as the same module user, and the kernel lets a process act on any process
// of its own uid in ways Landlock's signal scope does not cover. From inside a real sandbox:
// those routes are refused for other processes and still work on the module itself; leaving
// the process group, file watchers and CLONE_PARENT are refused.
#include <gtest/gtest.h>

#include "harness.hpp"

namespace oarbank::it {
namespace {

class SameUid : public ::testing::Test {
 protected:
  std::string probe(const std::vector<std::string>& args) {
    const std::string policy = tree.write_json("p.json", tree.base_policy());
    std::vector<std::string> argv = {kAgent, "sandbox-exec", policy, "--", tree.probe()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto result = run_command(argv);
    EXPECT_TRUE(result.exited(0)) << result.describe();
    return result.out_line();
  }
  SandboxTree tree;
};

TEST_F(SameUid, ResourceLimitsAndSchedulingOfAnotherProcessAreRefused) {
  Sleeper victim;  // the module user's uid, outside the sandbox
  const std::string pid = std::to_string(victim.pid());
  EXPECT_EQ(probe({"prlimit", pid}), "errno EPERM");
  EXPECT_EQ(probe({"setpriority", "0", pid}), "errno EPERM");
  EXPECT_EQ(probe({"setpriority", "2", "0"}), "errno EPERM");  // PRIO_USER: every module
  EXPECT_EQ(probe({"setpriority", "1", "0"}), "errno EPERM");  // PRIO_PGRP
  EXPECT_EQ(probe({"sched_setaffinity", pid}), "errno EPERM");
  EXPECT_EQ(probe({"ioprio_set", "1", pid}), "errno EPERM");
  EXPECT_EQ(probe({"ioprio_set", "3", "0"}), "errno EPERM");  // IOPRIO_WHO_USER
  // The victim is alive and unharmed.
  EXPECT_EQ(::kill(victim.pid(), 0), 0);
}

TEST_F(SameUid, TheModuleMayStillTuneItself) {
  EXPECT_EQ(probe({"prlimit-self"}), "ok");
  EXPECT_EQ(probe({"setpriority", "0", "0"}), "ok");
  EXPECT_EQ(probe({"sched_setaffinity", "0"}), "ok");
  EXPECT_EQ(probe({"ioprio_set", "1", "0"}), "ok");
  // Session 15's attack review: to the idle class only; best effort (any level: ionice -c 2
  // -n 0) and none (back to what nice gives) would undo an operator's idle class.
  EXPECT_EQ(probe({"ioprio_set", "1", "0", "0x4000"}), "errno EPERM");
  EXPECT_EQ(probe({"ioprio_set", "1", "0", "0"}), "errno EPERM");
}

TEST_F(SameUid, LeavingTheProcessGroupIsRefused) {
  EXPECT_EQ(probe({"setsid"}), "errno EPERM");
  EXPECT_EQ(probe({"setpgid"}), "errno EPERM");
  EXPECT_EQ(probe({"clone-parent"}), "errno EPERM");
}

TEST_F(SameUid, FileWatchersAreRefused) {
  EXPECT_EQ(probe({"inotify_init"}), "errno ENOSYS");
  EXPECT_EQ(probe({"fanotify_init"}), "errno EPERM");
}

}  // namespace
}  // namespace oarbank::it
