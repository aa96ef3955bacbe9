// Nothing is left behind: after the whole run no sandbox tree of this process remains in /tmp,
// no cgroup leaf of its runs, and no child of this process is still running.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "harness.hpp"

namespace oarbank::it {
namespace {

class NothingLeftBehind : public ::testing::Environment {
 public:
  void TearDown() override {
    const std::string prefix = "oarbank-it-" + std::to_string(::getpid()) + "-";
    for (const auto& name : list_dir("/tmp")) {
      EXPECT_FALSE(name.starts_with(prefix)) << "left behind: /tmp/" << name;
    }
    // No cgroup leaf of this process's runs (ids are unique_name()s, with our pid).
    const std::string pid_part = "-" + std::to_string(::getpid()) + "-";
    if (const std::string parent = test_leaves_parent(); !parent.empty()) {
      for (const auto& name : list_dir(parent)) {
        EXPECT_FALSE(name.starts_with("oarbank-oarbank-it-") &&
                     name.find(pid_part) != std::string::npos)
            << "leaf left behind: " << parent << "/" << name;
      }
    }
    // Every child (launcher, payload, sleeper) has been reaped.
    errno = 0;
    EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
    EXPECT_EQ(errno, ECHILD);
  }
};

[[maybe_unused]] ::testing::Environment* const kNothingLeftBehind =
    ::testing::AddGlobalTestEnvironment(new NothingLeftBehind);

TEST(NothingLeftBehindTest, TreeIsRemovedWithEverythingTheModuleMade) {
  std::string root;
  {
    SandboxTree tree;
    root = tree.root();
    // What a module leaves: nested dirs, a fifo, a dangling symlink, a read-only dir.
    ASSERT_EQ(::mkdir(tree.path("work/a").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(tree.path("work/a/b").c_str(), 0755), 0);
    write_file(tree.path("work/a/b/f"), "x");
    ASSERT_EQ(::mkfifo(tree.path("work/fifo").c_str(), 0644), 0);
    ASSERT_EQ(::symlink("/nonexistent", tree.path("work/dangling").c_str()), 0);
    ASSERT_EQ(::chmod(tree.path("work/a").c_str(), 0500), 0);
    ASSERT_TRUE(exists(root));
  }
  EXPECT_FALSE(exists(root));
}

}  // namespace
}  // namespace oarbank::it
