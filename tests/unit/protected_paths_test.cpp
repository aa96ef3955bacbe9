// sandbox-run's own files against a policy's paths (plan/protected_paths.hpp), and the run
// record's JSON (supervise/run_state.hpp): the pure parts of issue 10.
#include "plan/protected_paths.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "supervise/run_state.hpp"

namespace oarbank {
namespace {

TEST(ProtectedPaths, NormalizeFoldsSlashesDotsAndDotDots) {
  EXPECT_EQ(normalize_path("/run//user/./4242/"), "/run/user/4242");
  EXPECT_EQ(normalize_path("/run/user/x/../4242"), "/run/user/4242");
  EXPECT_EQ(normalize_path("/.."), "/");
  EXPECT_EQ(normalize_path(""), "/");
}

TEST(ProtectedPaths, OverlapIsTheSamePathOrAnAncestorByWholeComponents) {
  EXPECT_TRUE(paths_overlap("/run/user/4242", "/run/user/4242/oarbank/runs"));
  EXPECT_TRUE(paths_overlap("/run/user/4242/oarbank/runs/x", "/run/user/4242/oarbank/runs"));
  EXPECT_TRUE(paths_overlap("/run/oarbank/runs/", "/run//oarbank/runs"));
  EXPECT_TRUE(paths_overlap("/", "/etc/oarbank/agent.json"));
  EXPECT_FALSE(paths_overlap("/run/user/42", "/run/user/4242"));  // a prefix, not a parent
  EXPECT_FALSE(paths_overlap("/srv/data", "/run/oarbank/runs"));
  EXPECT_FALSE(paths_overlap("/etc/oarbank/agent.json.d", "/etc/oarbank/agent.json"));
}

TEST(ProtectedPaths, TheLineNamesThePolicyPathTheProtectedPathAndHow) {
  Policy policy;
  policy.bundle = "/opt/mod";
  policy.data = {"/srv/in", "/run/user/4242"};
  policy.work = "/run/oarbank/runs/w";
  const std::vector<NamedPath> state = {
      {"the run state directory", {"/run/user/4242/oarbank/runs"}}};
  EXPECT_EQ(protected_path_problem(policy_paths(policy), state),
            "the policy's data path /run/user/4242 contains the run state directory "
            "/run/user/4242/oarbank/runs");
  const std::vector<NamedPath> root = {{"the run state directory", {"/run/oarbank/runs"}}};
  EXPECT_EQ(protected_path_problem(policy_paths(policy), root),
            "the policy's work /run/oarbank/runs/w lies inside the run state directory "
            "/run/oarbank/runs");
  // A resolved form counts as much as the written one (a symbolic link to the directory).
  std::vector<NamedPath> named = {{"data path", {"/srv/link", "/run/oarbank/runs"}}};
  EXPECT_EQ(protected_path_problem(named, root),
            "the policy's data path /srv/link (/run/oarbank/runs) is the run state directory "
            "/run/oarbank/runs");
  const std::vector<NamedPath> config = {{"the node configuration", {"/etc/oarbank/agent.json"}}};
  EXPECT_EQ(protected_path_problem(policy_paths(policy), config), std::nullopt);
  policy.runtime = {"/etc/oarbank"};
  EXPECT_EQ(protected_path_problem(policy_paths(policy), config),
            "the policy's runtime path /etc/oarbank contains the node configuration "
            "/etc/oarbank/agent.json");
}

TEST(RunRecord, RoundTripsAndRefusesWhatIsNotARecord) {
  RunRecord r{.id = "m1",
              .supervisor_pid = 10,
              .supervisor_start_time = 11,
              .module_pid = 12,
              .module_start_time = 13,
              .process_group = 12,
              .cgroup = "/sys/fs/cgroup/x/oarbank-m1",
              .netns = true,
              .phase = "running",
              .started_at = 14};
  auto back = run_record_from_json(run_record_to_json(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->id, "m1");
  EXPECT_EQ(back->supervisor_start_time, 11U);
  EXPECT_EQ(back->module_pid, 12);
  EXPECT_EQ(back->cgroup, r.cgroup);
  EXPECT_TRUE(back->netns);
  EXPECT_EQ(back->phase, "running");
  EXPECT_FALSE(run_record_from_json(""));
  EXPECT_FALSE(run_record_from_json("[]"));
  EXPECT_FALSE(run_record_from_json(R"({"id":"m1"})"));
}

TEST(RunRecord, TheChildRecordsItselfAsAWholeRecord) {
  // What the spawned child writes before anything else: the prefix the supervisor made, with
  // its own pid (module and group leader) and start time, cut to length.
  FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  const int fd = ::fileno(file);
  const std::string longer(300, 'x');
  ASSERT_EQ(::pwrite(fd, longer.data(), longer.size(), 0), 300);
  const std::string prefix =
      R"({"cgroup":null,"container":"process-group","id":"m","netns":false,"phase":"running",)"
      R"("started_at":0,"supervisor_pid":1,"supervisor_start_time":2,)";
  ASSERT_EQ(record_self_as_module(fd, prefix.data(), prefix.size()), 0);
  std::string text(4096, '\0');
  text.resize(static_cast<std::size_t>(::pread(fd, text.data(), text.size(), 0)));
  auto record = run_record_from_json(text);
  ASSERT_TRUE(record) << text;
  EXPECT_EQ(record->module_pid, ::getpid());
  EXPECT_EQ(record->process_group, ::getpid());
  EXPECT_EQ(record->module_start_time, process_start_time(::getpid()));
  EXPECT_NE(record->module_start_time, 0U);
  std::fclose(file);
}

}  // namespace
}  // namespace oarbank
