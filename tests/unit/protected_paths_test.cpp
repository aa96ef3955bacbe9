// sandbox-run's own files against a policy's paths (plan/protected_paths.hpp): a pure part of
// issue 10. The run record's JSON has its tests in run_state_test.cpp.
#include "plan/protected_paths.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace oarbank
