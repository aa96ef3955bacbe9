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

// Attack review (session 16): a caller started under a real-time policy, a negative nice, the
// real-time I/O class and without address randomization handed all four to the module; the
// identity step resets them (the filter would let the module set none of them itself).
TEST_F(SameUid, TheCallersSchedulingAndPersonalityDoNotReachTheModule) {
  for (const char* tool :
       {"/usr/bin/chrt", "/usr/bin/nice", "/usr/bin/ionice", "/usr/bin/setarch"}) {
    if (::access(tool, X_OK) != 0) GTEST_SKIP() << tool << " is not here";
  }
  const std::string policy = tree.write_json("p.json", tree.base_policy());
  auto result =
      run_command({"/usr/bin/chrt", "-f", "10", "/usr/bin/nice", "-n", "-5", "/usr/bin/ionice",
                   "-c1", "-n2", "/usr/bin/setarch", "-R", "--", "/bin/sh", "-c",
                   // The wrapper really runs so (SCHED_FIFO 1, nice -5, class 1, 0x40000).
                   std::string(tree.probe()) + " sched-state >&2; exec \"$@\"", "sh", kAgent,
                   "sandbox-exec", policy, "--", tree.probe(), "sched-state"});
  ASSERT_TRUE(result.exited(0)) << result.describe();
  EXPECT_EQ(result.err, "1 -5 1 0x40000\n");
  EXPECT_EQ(result.out_line(), "0 0 2 0x0");
  // SCHED_RESET_ON_FORK (a unit's CPUSchedulingResetOnFork=) is no real-time policy: the launch
  // goes on, the flag kept (clearing it needs CAP_SYS_NICE; the review's refused launch).
  for (const char* chrt_policy : {"-o", "-b"}) {
    auto flagged = run_command({"/usr/bin/chrt", chrt_policy, "-R", "0", kAgent, "sandbox-exec",
                                policy, "--", tree.probe(), "sched-state"});
    ASSERT_TRUE(flagged.exited(0)) << chrt_policy << ": " << flagged.describe();
    EXPECT_EQ(flagged.out_line(),
              std::to_string(0x40000000 | (chrt_policy[1] == 'b' ? SCHED_BATCH : SCHED_OTHER)) +
                  " 0 0 0x0")
        << chrt_policy;
  }
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
