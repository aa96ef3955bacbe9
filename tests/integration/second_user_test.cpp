// Attack review from outside every sandbox: a second local user of the node (an ordinary
// account, "mallory") while root runs sandbox-run and sandbox-exec. Each test is one route
// that was open, tried for real, and the way it is closed now. (The uid registry's part, a
// number a running process holds, is in own_user_test.cpp beside the registry's others.)
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
  std::vector<std::string> env_with(const std::string& entry) const {
    auto e = launcher_environment();
    e.push_back("OARBANK_STATE_DIR=" + tree.path("state"));
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

}  // namespace
}  // namespace oarbank::it
