// The launch steps as data (plan/launch_steps.hpp), the status channel's line
// (plan/status_line.hpp) and the error convention (sys/error.hpp): pure parts.
#include "plan/launch_steps.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "plan/plan.hpp"
#include "plan/plan_json.hpp"
#include "plan/status_line.hpp"
#include "sys/error.hpp"

namespace oarbank {
namespace {

TEST(LaunchSteps, NamesAreUniqueAndFoundAgain) {
  std::set<std::string_view> names;
  for (const auto& step : kLaunchSteps) {
    EXPECT_TRUE(names.insert(step.name).second) << step.name;
    EXPECT_FALSE(step.description.empty()) << step.name;
    EXPECT_EQ(step_from_name(step.name), step.step) << step.name;
    EXPECT_EQ(step_name(step.step), step.name);
  }
  EXPECT_EQ(step_from_name("execve"), std::nullopt);
  EXPECT_EQ(step_from_name(""), std::nullopt);
}

TEST(LaunchSteps, TheLauncherRunsTodaysStepsInOrder) {
  std::vector<std::string_view> names;
  for (const auto& step : launcher_steps()) names.push_back(step.name);
  EXPECT_EQ(names, (std::vector<std::string_view>{"descriptors", "identity", "no_new_privs",
                                                  "landlock", "seccomp", "exec"}));
}

TEST(LaunchSteps, TheSupervisorSetsUpBeforeAndWatchesAfter) {
  // Supervisor steps before the launcher's, then its phases; the first irreversible step is
  // the launcher's identity, and everything after it is irreversible up to the exec.
  bool seen_launcher = false;
  std::vector<std::string_view> after;
  for (const auto& step : kLaunchSteps) {
    if (step.runner == StepRunner::Launcher) {
      seen_launcher = true;
    } else if (seen_launcher) {
      after.push_back(step.name);
    }
    if (step.irreversible) {
      EXPECT_EQ(step.runner, StepRunner::Launcher) << step.name;
    }
  }
  EXPECT_EQ(after, (std::vector<std::string_view>{"await-exec", "verify", "wait", "teardown"}));
  EXPECT_FALSE(step_info(LaunchStep::Descriptors).irreversible);
  EXPECT_TRUE(step_info(LaunchStep::Identity).irreversible);
  EXPECT_TRUE(step_info(LaunchStep::Exec).irreversible);
  for (auto name : {"run-state", "cgroup", "container", "directories", "network", "proxy",
                    "terminal", "spawn"}) {
    auto step = step_from_name(name);
    ASSERT_TRUE(step) << name;
    EXPECT_EQ(step_info(*step).runner, StepRunner::Supervisor) << name;
    EXPECT_LT(*step, LaunchStep::Descriptors) << name;
  }
}

TEST(LaunchSteps, StepErrorNamesTheStepAndTheErrno) {
  const Error e = step_error(LaunchStep::Spawn, "clone3", EPERM);
  EXPECT_STREQ(e.what(), ("step spawn failed: clone3: " + errno_text(EPERM)).c_str());
  EXPECT_EQ(e.kind(), ErrorKind::StepFailed);
  EXPECT_EQ(e.step(), LaunchStep::Spawn);
  EXPECT_EQ(e.error_number(), EPERM);
  EXPECT_EQ(std::string(step_error(LaunchStep::Cgroup, "no leaf").what()),
            "step cgroup failed: no leaf");
}

// --explain lists the launcher's steps from the list: descriptors first (it runs first; it
// was missing before), and the exec step under the name --explain always gave it.
class AllDirectories : public PathOracle {
 public:
  [[nodiscard]] PathKind kind(const std::string& path) const override {
    return path.starts_with("/dev/") ? PathKind::File : PathKind::Directory;
  }
  [[nodiscard]] std::string canonical(const std::string& path) const override { return path; }
};

TEST(LaunchSteps, ExplainListsDescriptorsFirst) {
  KernelFeatures features;
  features.kernel_release = "test";
  features.landlock = LandlockState::Present;
  features.landlock_abi = 6;
  features.seccomp_filter = true;
  const NodeConfig config;
  const Policy policy = parse_policy(R"({"bundle": "/srv/mod", "ipc_isolation": "best-effort"})");
  LaunchRequest request;
  request.argv = {"/srv/mod/run"};
  const Plan plan = make_plan(policy, features, config, AllDirectories(), request);
  const auto explained = explain_plan(plan, policy, features, config);
  EXPECT_EQ(explained.at("steps"),
            nlohmann::json::parse(
                R"(["descriptors", "identity", "no_new_privs", "landlock", "seccomp", "execve"])"));
}

TEST(ErrorConvention, EveryKindHasItsExitCode) {
  const std::vector<std::pair<ErrorKind, int>> expected = {
      {ErrorKind::Usage, 64},         {ErrorKind::InvalidPolicy, 64}, {ErrorKind::Config, 78},
      {ErrorKind::Unenforceable, 70}, {ErrorKind::StepFailed, 70},    {ErrorKind::ExecFailed, 71},
      {ErrorKind::Internal, 70},      {ErrorKind::NotFound, 69},      {ErrorKind::Busy, 75},
  };
  ASSERT_EQ(expected.size(), static_cast<std::size_t>(ErrorKind::Busy) + 1);
  for (const auto& [kind, code] : expected) {
    EXPECT_EQ(exit_code_for(kind), code) << static_cast<int>(kind);
  }
  static_assert(exit_code_for(ErrorKind::StepFailed) == 70);
}

TEST(ErrorConvention, PolicyAndConfigErrorsAreErrors) {
  try {
    parse_policy(R"({"bundle": 5})");
    FAIL() << "no PolicyError";
  } catch (const Error& e) {  // one catch handles all
    EXPECT_EQ(e.kind(), ErrorKind::InvalidPolicy);
    EXPECT_EQ(e.where(), "/bundle");
    EXPECT_EQ(e.step(), std::nullopt);
    EXPECT_TRUE(std::string(e.what()).starts_with("/bundle: ")) << e.what();
    ASSERT_NE(dynamic_cast<const PolicyError*>(&e), nullptr);
    EXPECT_EQ(dynamic_cast<const PolicyError&>(e).pointer(), "/bundle");
  }
  try {
    parse_node_config(R"({"module_uid": "x"})", "test.json");
    FAIL() << "no ConfigError";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Config);
    EXPECT_EQ(e.where(), "/module_uid");
    EXPECT_EQ(exit_code_for(e.kind()), 78);
    EXPECT_TRUE(std::string(e.what()).starts_with("configuration test.json: /module_uid: "))
        << e.what();
  }
  // The constructor other code uses keeps working, without step or where.
  const Error plain(ErrorKind::Usage, "usage: x", EINVAL);
  EXPECT_EQ(plain.error_number(), EINVAL);
  EXPECT_EQ(plain.step(), std::nullopt);
  EXPECT_TRUE(plain.where().empty());
}

TEST(StatusLine, WrittenAndParsedBack) {
  const std::string line = status_failure_line(
      70, "oarbank-agent sandbox-exec: step landlock failed: landlock_restrict_self: EPERM");
  EXPECT_EQ(line,
            "70\toarbank-agent sandbox-exec: step landlock failed: landlock_restrict_self: "
            "EPERM\n");
  const StatusReport report = parse_status_channel(line);
  EXPECT_FALSE(report.exec);
  ASSERT_TRUE(report.code);
  EXPECT_EQ(*report.code, 70);
  EXPECT_EQ(report.line,
            "oarbank-agent sandbox-exec: step landlock failed: landlock_restrict_self: EPERM");
  EXPECT_EQ(parse_status_channel(status_failure_line(71, "x: execve failed")).code, 71);
}

TEST(StatusLine, TheChildsLinesAreBuiltAtCompileTime) {
  static constexpr auto kLine = step_failure_status_line(
      exit_code_for(ErrorKind::StepFailed), LaunchStep::Cgroup, "joining the leaf (cgroup.procs)");
  EXPECT_EQ(kLine.view(), "70\tstep cgroup failed: joining the leaf (cgroup.procs)\n");
  const StatusReport report = parse_status_channel(kLine.view());
  EXPECT_EQ(report.code, 70);
  EXPECT_EQ(report.line, "step cgroup failed: joining the leaf (cgroup.procs)");
  static_assert(step_failure_status_line<32>(70, LaunchStep::Wait, "x").size == 23);
}

TEST(StatusLine, ExecAndEndOfFileIsSuccess) {
  EXPECT_EQ(kStatusExecLine.view(), "exec\n");
  const StatusReport report = parse_status_channel(kStatusExecLine.view());
  EXPECT_TRUE(report.exec);
  EXPECT_FALSE(report.code);
  EXPECT_FALSE(parse_status_channel("").exec);
  EXPECT_FALSE(parse_status_channel("").code);
}

TEST(StatusLine, ANonNumericCodeFailsClosed) {
  const StatusReport report = parse_status_channel("7x\tsomething\n");
  EXPECT_EQ(report.code, 70);
  EXPECT_EQ(report.line, "7x\tsomething");
  // Lines that are not a failure (no tab, a code too long) are skipped; the first failure
  // counts, also without its newline.
  const StatusReport later = parse_status_channel("noise\n1234\tx\n75\tbusy");
  EXPECT_EQ(later.code, 75);
  EXPECT_EQ(later.line, "busy");
}

TEST(StatusLine, ALineThatDoesNotFitIsNotWritten) {
  char buffer[8];
  EXPECT_EQ(compose_status_line(buffer, sizeof buffer, 70, {"too long for it"}), 0U);
  EXPECT_EQ(compose_status_line(buffer, sizeof buffer, 70, {"abcd"}), 8U);
  EXPECT_EQ(std::string_view(buffer, 8), "70\tabcd\n");
}

}  // namespace
}  // namespace oarbank
