// Session 14's attack review: what the launcher reads on the operator's word (the policy, the
// node configuration) is the operator's alone (sys/trusted_input.hpp). A file, or a directory
// above it, that another user can write, or a file another user owns, is refused before
// anything is made, naming it; the same files as root's 0644 in root's 0755 directory run.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sandbox_fixture.hpp"

namespace oarbank::it {
namespace {

class OperatorInputs : public UncappedTest {
 protected:
  RunResult exec_with(const std::string& config, const std::string& policy) {
    RunOptions o;
    o.env = launcher_environment();
    return run_command({OARBANK_AGENT_BINARY, "sandbox-exec", "--config", config, policy, "--",
                        tree.probe(), "true"},
                       o);
  }
};

TEST_F(OperatorInputs, APolicyOrConfigurationAnotherUserCanChangeIsRefused) {
  if (!running_as_root()) GTEST_SKIP() << "needs root to give the files other owners";
  const std::string policy = tree.write_json("inputs-policy.json", base_policy());
  const std::string config = tree.write_json("inputs-config.json", node_config());
  ASSERT_EQ(::chmod(policy.c_str(), 0644), 0);
  ASSERT_EQ(::chmod(config.c_str(), 0644), 0);
  RunResult fine = exec_with(config, policy);
  EXPECT_TRUE(fine.exited(0)) << fine.describe();

  ASSERT_EQ(::chmod(policy.c_str(), 0666), 0);
  RunResult writable = exec_with(config, policy);
  expect_launcher_failure(writable, 64, {policy, "is writable by others (mode 0666)"});
  ASSERT_EQ(::chmod(policy.c_str(), 0664), 0);
  expect_launcher_failure(exec_with(config, policy), 64, {policy, "is writable by its group"});
  ASSERT_EQ(::chmod(policy.c_str(), 0644), 0);
  ASSERT_EQ(::chown(policy.c_str(), 4242, 4242), 0);
  expect_launcher_failure(exec_with(config, policy), 64,
                          {policy, "belongs to uid 4242, neither root nor the caller"});
  ASSERT_EQ(::chown(policy.c_str(), 0, 0), 0);

  ASSERT_EQ(::chown(config.c_str(), 4242, 4242), 0);
  expect_launcher_failure(exec_with(config, policy), 78, {config, "belongs to uid 4242"});
  ASSERT_EQ(::chown(config.c_str(), 0, 0), 0);

  // A directory above that others may write (not sticky): they could put another file in
  // its place. A sticky one (as /tmp) is fine.
  const std::string dir = tree.path("inputs-open");
  std::filesystem::create_directories(dir);
  const std::string inside = dir + "/policy.json";
  std::filesystem::copy_file(policy, inside);
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  expect_launcher_failure(exec_with(config, inside), 64,
                          {dir + ", a directory above " + inside, "not sticky"});
  ASSERT_EQ(::chmod(dir.c_str(), 01777), 0);
  RunResult sticky = exec_with(config, inside);
  EXPECT_TRUE(sticky.exited(0)) << sticky.describe();

  // Session 14's second review: a link to root's own file, in a directory another user owns,
  // is theirs to point at any file of root's: the directories the path names are judged too,
  // not only where it leads.
  const std::string theirs = tree.path("inputs-theirs");
  std::filesystem::create_directories(theirs);
  ASSERT_EQ(::chown(theirs.c_str(), 4242, 4242), 0);
  const std::string link = theirs + "/policy.json";
  std::filesystem::create_symlink(policy, link);
  expect_launcher_failure(exec_with(config, link), 64,
                          {theirs + ", a directory above " + link, "belongs to uid 4242"});

  // Session 14's third review: another user's link in a sticky directory (as /tmp, where
  // anyone may make one), to root's file or to a directory of root's on the way to it: theirs
  // to point at any file of root's. A link of root's (or the caller's) there is fine.
  const std::string sticky_dir = tree.path("inputs-sticky");
  std::filesystem::create_directories(sticky_dir);
  ASSERT_EQ(::chmod(sticky_dir.c_str(), 01777), 0);
  const std::string their_link = sticky_dir + "/their-policy.json";
  std::filesystem::create_symlink(policy, their_link);
  ASSERT_EQ(::lchown(their_link.c_str(), 4242, 4242), 0);
  // Where fs.protected_symlinks is 1 (the 6.12 guest) the kernel already refuses to follow
  // another user's link in a world-writable sticky directory (EACCES at the open); where it is
  // 0 (this kernel's default, and this machine) the walk refuses it.
  const auto refused_through = [&](const std::string& path, const std::string& via) {
    RunResult r = exec_with(config, path);
    EXPECT_TRUE(r.exited(64)) << r.describe();
    EXPECT_TRUE(r.err.find(via + ", a link on the way to " + path) != std::string::npos ||
                r.err.find("cannot open " + path + ": EACCES") != std::string::npos)
        << r.describe();
  };
  refused_through(their_link, their_link);
  const std::string their_dir_link = sticky_dir + "/their-dir";
  const std::filesystem::path policy_file(policy);
  std::filesystem::create_symlink(policy_file.parent_path(), their_dir_link);
  ASSERT_EQ(::lchown(their_dir_link.c_str(), 4242, 4242), 0);
  const std::string through = their_dir_link + "/" + policy_file.filename().string();
  refused_through(through, their_dir_link);
  const std::string root_link = sticky_dir + "/root-policy.json";
  std::filesystem::create_symlink(policy, root_link);
  RunResult root_links = exec_with(config, root_link);
  EXPECT_TRUE(root_links.exited(0)) << root_links.describe();
}

// Session 15: the bare launcher, as sandbox-run, reads no policy the module could rewrite for
// its next run: one inside its work, temp or data (named, or reached through a link) is
// refused (70) before anything is made. Started by the module's own user, what the module
// wrote would be that user's, which the trusted-input check accepts; root's launch refuses the
// same place. The same policy outside them runs.
TEST_F(OperatorInputs, ThePolicyFileInsideWhatTheModuleWritesIsRefused) {
  const std::string work = tree.path("inputs-work");
  std::filesystem::create_directories(work);
  auto policy = base_policy();
  policy["work"] = work;
  const std::string inside = work + "/policy.json";
  {
    std::ofstream out(inside);
    out << policy.dump();
  }
  ASSERT_EQ(::chmod(inside.c_str(), 0644), 0);
  const std::string config = tree.write_json("inputs-config-work.json", node_config());
  ASSERT_EQ(::chmod(config.c_str(), 0644), 0);
  expect_launcher_failure(
      exec_with(config, inside), 70,
      {"step directories failed: the policy's work " + work + " contains the policy file " + inside,
       "the module could rewrite its own policy for its next run"});
  const std::string link = tree.path("inputs-link-policy.json");
  std::filesystem::create_symlink(inside, link);
  expect_launcher_failure(exec_with(config, link), 70,
                          {"the policy's work " + work + " contains the policy file " + inside,
                           "keep the policy outside work, temp and data"});
  // Session 15's second review: ".." after a link the module made (work/cfg -> work/a/b) is
  // where the kernel resolves it (work), not where the text folds to (work's parent).
  std::filesystem::create_directories(work + "/a/b");
  std::filesystem::create_directory_symlink(work + "/a/b", work + "/cfg");
  expect_launcher_failure(exec_with(config, work + "/cfg/../../policy.json"), 70,
                          {"the policy's work " + work + " contains the policy file " + inside});
  // Outside: the check is not what refuses it (the launch goes on to its own steps).
  const std::string outside = tree.write_json("inputs-work-policy.json", policy);
  ASSERT_EQ(::chmod(outside.c_str(), 0644), 0);
  RunResult r = exec_with(config, outside);
  EXPECT_EQ(r.err.find("could rewrite its own policy"), std::string::npos) << r.describe();
}

}  // namespace
}  // namespace oarbank::it
