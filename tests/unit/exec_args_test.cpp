// The hand-parsed sandbox-exec command line: the plain form only; everything else goes to CLI11.
#include "cli/exec_args.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace oarbank::cli {
namespace {

std::optional<ExecArgs> parse(std::vector<const char*> words) {
  words.insert(words.begin(), {"oarbank-agent", "sandbox-exec"});
  return parse_plain_exec_args(static_cast<int>(words.size()), words.data());
}

TEST(PlainExecArgs, TheFullPlainForm) {
  auto args = parse({"--config", "/etc/c.json", "--setenv", "A=1", "--keep-fd", "5", "--setenv",
                     "B=2", "p.json", "--", "/bin/prog", "--explain", "--config", "x"});
  ASSERT_TRUE(args.has_value());
  EXPECT_EQ(args->policy_path, "p.json");
  EXPECT_EQ(args->config_path, "/etc/c.json");
  EXPECT_EQ(args->setenv, (std::vector<std::string>{"A=1", "B=2"}));
  EXPECT_EQ(args->keep_fds, (std::vector<int>{5}));
  EXPECT_FALSE(args->explain);
  EXPECT_TRUE(args->separator);
  // Everything after "--" belongs to the module, options included.
  EXPECT_EQ(args->argv, (std::vector<std::string>{"/bin/prog", "--explain", "--config", "x"}));
}

TEST(PlainExecArgs, OptionsAfterThePolicyAreStillTheLaunchers) {
  auto args = parse({"p.json", "--setenv", "A=1", "--", "prog"});
  ASSERT_TRUE(args.has_value());
  EXPECT_EQ(args->setenv, (std::vector<std::string>{"A=1"}));
}

TEST(PlainExecArgs, AnythingElseIsLeftToCli11) {
  EXPECT_FALSE(parse({"p.json", "prog"}).has_value());                     // no "--"
  EXPECT_FALSE(parse({"--explain", "p.json", "--", "prog"}).has_value());  // --explain
  EXPECT_FALSE(parse({"--help"}).has_value());
  EXPECT_FALSE(parse({"--config=c.json", "p.json", "--", "prog"}).has_value());
  EXPECT_FALSE(parse({"--keep-fd", "x", "p.json", "--", "prog"}).has_value());
  EXPECT_FALSE(parse({"--keep-fd", "5x", "p.json", "--", "prog"}).has_value());
  EXPECT_FALSE(parse({"--config", "a", "--config", "b", "p.json", "--", "prog"}).has_value());
  EXPECT_FALSE(parse({"p.json", "extra", "--", "prog"}).has_value());
  EXPECT_FALSE(parse({"--", "prog"}).has_value());          // no policy
  EXPECT_FALSE(parse({"p.json", "--setenv"}).has_value());  // value missing
  EXPECT_FALSE(parse({"--unknown", "p.json", "--", "prog"}).has_value());
  std::vector<const char*> other = {"oarbank-agent", "sandbox-report"};
  EXPECT_FALSE(parse_plain_exec_args(2, other.data()).has_value());
}

TEST(PlainExecArgs, AnEmptyCommandAfterTheSeparatorIsStillPlain) {
  // run_sandbox_exec answers it with the usage error "no command after --".
  auto args = parse({"p.json", "--"});
  ASSERT_TRUE(args.has_value());
  EXPECT_TRUE(args->argv.empty());
}

std::optional<RunArgs> parse_run(std::vector<const char*> words) {
  words.insert(words.begin(), {"oarbank-agent", "sandbox-run"});
  return parse_plain_run_args(static_cast<int>(words.size()), words.data());
}

TEST(PlainRunArgs, ThePlainFormIsParsedByHand) {
  auto args = parse_run({"--config",    "c.json",       "--id",     "job-1",    "--timeout",
                         "2.5",         "--kill-after", "0",        "--result", "r.json",
                         "--proxy-log", "p.log",        "--setenv", "A=1",      "--keep-fd",
                         "5",           "p.json",       "--",       "prog",     "--explain"});
  ASSERT_TRUE(args.has_value());
  EXPECT_EQ(args->exec.config_path, "c.json");
  EXPECT_EQ(args->id, "job-1");
  EXPECT_EQ(args->timeout, 2.5);
  EXPECT_EQ(args->kill_after, 0.0);
  EXPECT_EQ(args->result_path, "r.json");
  EXPECT_EQ(args->proxy_log, "p.log");
  EXPECT_EQ(args->exec.setenv, std::vector<std::string>{"A=1"});
  EXPECT_EQ(args->exec.keep_fds, std::vector<int>{5});
  EXPECT_EQ(args->exec.policy_path, "p.json");
  EXPECT_EQ(args->exec.argv, (std::vector<std::string>{"prog", "--explain"}));
  EXPECT_FALSE(args->exec.explain);
}

// Issue 16: durations as timeout(1) takes them.
TEST(Duration, SecondsOrAUnit) {
  EXPECT_EQ(parse_duration("10"), 10.0);
  EXPECT_EQ(parse_duration("0.5"), 0.5);
  EXPECT_EQ(parse_duration("10s"), 10.0);
  EXPECT_EQ(parse_duration("2m"), 120.0);
  EXPECT_EQ(parse_duration("1.5h"), 5400.0);
  EXPECT_EQ(parse_duration("1d"), 86400.0);
  for (const char* bad : {"", "s", "10x", "10ms", "1m30s", "-1", "+1", "1e3", "0x10", " 10", "10 s",
                          "1..5", "inf", "nan"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(parse_duration(bad), std::nullopt);
  }
  auto args = parse_run({"--timeout", "2m", "--kill-after", "5s", "p.json", "--", "prog"});
  ASSERT_TRUE(args.has_value());
  EXPECT_EQ(args->timeout, 120.0);
  EXPECT_EQ(args->kill_after, 5.0);
}

TEST(PlainRunArgs, AnythingElseIsLeftToCli11) {
  EXPECT_FALSE(parse_run({"--explain", "p.json", "--", "prog"}).has_value());
  EXPECT_FALSE(parse_run({"--timeout", "1e3", "p.json", "--", "prog"}).has_value());
  EXPECT_FALSE(parse_run({"--timeout", "-1", "p.json", "--", "prog"}).has_value());
  EXPECT_FALSE(parse_run({"--timeout", "1", "--timeout", "2", "p.json", "--", "prog"}).has_value());
  EXPECT_FALSE(parse_run({"--id", "a", "--id", "b", "p.json", "--", "prog"}).has_value());
  EXPECT_FALSE(parse_run({"--id", "", "p.json", "--", "prog"}).has_value());
  EXPECT_FALSE(parse_run({"--bogus", "p.json", "--", "prog"}).has_value());
  EXPECT_FALSE(parse_run({"p.json", "prog"}).has_value());  // no "--"
  std::vector<const char*> exec = {"oarbank-agent", "sandbox-exec", "p.json", "--", "prog"};
  EXPECT_FALSE(parse_plain_run_args(5, exec.data()).has_value());
}

}  // namespace
}  // namespace oarbank::cli
