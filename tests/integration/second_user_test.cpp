// Attack review from outside every sandbox: a second local user of the node (an ordinary
// account, "mallory") while root runs sandbox-run and sandbox-exec. Each test is one route
// that was open, tried for real, and the way it is closed now. (The uid registry's part, a
// number a running process holds, is in own_user_test.cpp beside the registry's others.)
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "sandbox_fixture.hpp"

namespace oarbank::it {
namespace {

using namespace std::chrono_literals;

class SecondUser : public UncappedTest {
 protected:
  // The launcher's environment with `entry` added, or put in place of the fixture's own.
  std::vector<std::string> env_with(const std::string& entry) const {
    auto e = launcher_environment();
    e.push_back("OARBANK_STATE_DIR=" + tree.path("state"));
    const std::string name = entry.substr(0, entry.find('=') + 1);
    std::erase_if(e, [&](const std::string& old) { return old.starts_with(name); });
    e.push_back(entry);
    return e;
  }
};

// A secret given as --setenv NAME=VALUE is in the agent's /proc/PID/cmdline, which every user
// of the node may read (tried: mallory read `--setenv API_TOKEN=...` of a root sandbox-run).
// --setenv NAME takes the value from the agent's own environment (/proc/PID/environ: its user
// and root alone), in sandbox-exec and in sandbox-run; a NAME that is not set there, or
// whose value holds a newline, is a usage error (64), one line, and nothing runs.
TEST_F(SecondUser, SetenvNameTakesItsValueFromTheEnvironmentNotTheCommandLine) {
  const std::string policy = tree.write_json("setenv.json", base_policy());
  const std::string token = "API_TOKEN=s3cr3t-only-in-the-environment";
  for (const char* command : {"sandbox-exec", "sandbox-run"}) {
    SCOPED_TRACE(command);
    RunOptions o;
    o.env = env_with(token);
    o.timeout = 20s;
    RunResult r = run_command({OARBANK_AGENT_BINARY, command, "--config", config_path, "--setenv",
                               "API_TOKEN", policy, "--", tree.probe(), "env", "API_TOKEN"},
                              o);
    EXPECT_TRUE(r.exited(0)) << r.describe();
    EXPECT_EQ(r.out_line(), "s3cr3t-only-in-the-environment");
    // NAME=VALUE still gives the value itself.
    r = run_command({OARBANK_AGENT_BINARY, command, "--config", config_path, "--setenv",
                     "API_TOKEN=given", policy, "--", tree.probe(), "env", "API_TOKEN"},
                    o);
    EXPECT_TRUE(r.exited(0)) << r.describe();
    EXPECT_EQ(r.out_line(), "given");
    const std::string marker = tree.path("work/ran-" + std::string(command));
    for (const std::string& bad : {std::string("API_TOKEN_UNSET"), std::string("MULTI")}) {
      SCOPED_TRACE(bad);
      o.env = env_with("MULTI=two\nlines");
      r = run_command({OARBANK_AGENT_BINARY, command, "--config", config_path, "--setenv", bad,
                       policy, "--", tree.probe(), "write", marker},
                      o);
      EXPECT_TRUE(r.exited(64)) << r.describe();
      EXPECT_EQ(r.err_line_count(), 1U) << r.err;
      EXPECT_NE(r.err.find("--setenv " + bad + ": "), std::string::npos) << r.err;
      EXPECT_FALSE(exists(marker));
    }
  }
}

// The module user registry made or linked by another user ("mallory", uid 65533 here): a
// registry directory of theirs would let them forge a lease (two ids on one uid, a module on
// theirs); a link of theirs would point root at one they chose. Refused with 70, one line
// naming the registry (not "the run state directory", which it is not), nothing runs.
TEST_F(SecondUser, ARegistryAnotherUserMadeOrLinkedIsRefusedAndNamed) {
  if (!running_as_root()) GTEST_SKIP() << "the registry is used by sandbox-run as root";
  constexpr uid_t kMallory = 65533;
  const std::string theirs = tree.path("theirs");
  ASSERT_EQ(::mkdir(theirs.c_str(), 0700), 0);
  ASSERT_EQ(::chown(theirs.c_str(), kMallory, kMallory), 0);
  const std::string real = tree.path("real-registry");
  ASSERT_EQ(::mkdir(real.c_str(), 0700), 0);
  const std::string link = tree.path("linked");
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  ASSERT_EQ(::lchown(link.c_str(), kMallory, kMallory), 0);
  const std::string policy = tree.write_json("registry.json", base_policy());
  auto node = node_config();
  const auto first = 3100000000U + static_cast<std::uint32_t>(::getpid() % 100000) * 16U;
  node["module_users"] = {{"first", first}, {"last", first + 15}};
  const std::string config = tree.write_json("registry-node.json", node);
  for (const auto& [registry, why] : std::vector<std::pair<std::string, std::string>>{
           {theirs, theirs + " belongs to uid 65533"},
           {link + "/users", link + " is not a directory (a symbolic link?)"}}) {
    SCOPED_TRACE(registry);
    RunOptions o;
    o.env = env_with("OARBANK_USER_REGISTRY=" + registry);
    o.timeout = 20s;
    const std::string marker = tree.path("work/ran");
    RunResult r =
        run_command({OARBANK_AGENT_BINARY, "sandbox-run", "--config", config, "--id",
                     unique_name("registry"), policy, "--", tree.probe(), "write", marker},
                    o);
    EXPECT_TRUE(r.exited(70)) << r.describe();
    EXPECT_EQ(r.err_line_count(), 1U) << r.err;
    EXPECT_NE(r.err.find("the module user registry " + registry + " cannot be trusted: " + why),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(exists(marker));
  }
  EXPECT_TRUE(list_dir(real).empty());
}

// A user's subordinate ids (/etc/subuid, /etc/subgid; a fake directory here, the node's are
// not the tests' to edit) are theirs: newuidmap, setuid root, lets them map the range into a
// user namespace and run processes as those very numbers (tried: with module_users
// 100000-100015 and mallory's default range 100000:65536, mallory, unprivileged, planted a
// file in a running module's work directory and stopped the module). A new id is not leased
// such a number; a leased number that a range comes to hold refuses the id's next run (70,
// one line naming the file, its line and module_users) and sandbox-check --id says so; once
// the range is gone, the id runs again with its number.
TEST_F(SecondUser, ASubordinateIdOfAUserIsNeverAModulesUser) {
  if (!running_as_root()) GTEST_SKIP() << "module users are leased by sandbox-run as root";
  auto node = node_config();
  const auto first = 3200000000U + static_cast<std::uint32_t>(::getpid() % 100000) * 16U;
  node["module_users"] = {{"first", first}, {"last", first + 15}};
  const std::string config = tree.write_json("subid-node.json", node);
  const std::string subids = tree.path("subids");
  ASSERT_EQ(::mkdir(subids.c_str(), 0755), 0);
  write_file(subids + "/subuid", "mallory:" + std::to_string(first) + ":2\n", 0644);
  auto policy = base_policy();
  policy["work"] = tree.path("subid/work");
  policy.erase("temp");
  policy.erase("data");
  const std::string policy_file = tree.write_json("subid.json", policy);
  const std::string id = unique_name("subid");
  RunOptions o;
  o.env = env_with("OARBANK_SUBORDINATE_IDS_DIR=" + subids);
  o.timeout = 20s;
  const std::vector<std::string> run = {
      OARBANK_AGENT_BINARY, "sandbox-run", "--config",   config, "--id", id,
      policy_file,          "--",          tree.probe(), "ids"};
  RunResult first_run = run_command(run, o);
  ASSERT_TRUE(first_run.exited(0)) << first_run.describe();
  const std::string leased = std::to_string(first + 2);
  EXPECT_EQ(first_run.out_line(), leased + " " + leased);
  const std::string line = "eve:" + leased + ":1";
  write_file(subids + "/subgid", line + "\n", 0644);
  RunResult refused = run_command(run, o);
  EXPECT_TRUE(refused.exited(70)) << refused.describe();
  EXPECT_EQ(refused.out, "");
  EXPECT_EQ(refused.err_line_count(), 1U) << refused.err;
  EXPECT_NE(refused.err.find(subids + "/subgid (" + line + ")"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("module_users"), std::string::npos) << refused.err;
  RunResult check = run_command(
      {OARBANK_AGENT_BINARY, "sandbox-check", "--config", config, "--id", id, policy_file}, o);
  EXPECT_TRUE(check.exited(70)) << check.describe();
  EXPECT_NE(check.err.find(subids + "/subgid (" + line + ")"), std::string::npos) << check.err;
  ASSERT_EQ(::unlink((subids + "/subgid").c_str()), 0);
  RunResult again = run_command(run, o);
  EXPECT_TRUE(again.exited(0)) << again.describe();
  EXPECT_EQ(again.out, first_run.out);
}

}  // namespace
}  // namespace oarbank::it
