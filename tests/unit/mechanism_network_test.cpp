// The network mechanism's pure half (plan/mechanism_network.hpp): its rows and how an egress
// module is kept to the proxy per launch mode, its plan section (the port rule), the proxy
// variables, its --explain part (the egress golden files) and its seccomp rules on inet sockets.
#include "plan/mechanism_network.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "plan/mechanism.hpp"
#include "plan/plan.hpp"
#include "plan/plan_json.hpp"
#include "plan/seccomp_rules.hpp"
#include "plan_fixtures.hpp"
#include "sys/error.hpp"
#include "sys/landlock_abi.hpp"

namespace oarbank {
namespace {

using plan_fixtures::check_golden;
using plan_fixtures::egress_policy;
using plan_fixtures::FakePaths;
using plan_fixtures::features_with_abi;
using plan_fixtures::request;

class EgressPlanPerAbi : public ::testing::TestWithParam<int> {};

TEST_P(EgressPlanPerAbi, EgressPolicyGolden) {
  const int abi = GetParam();
  FakePaths paths;
  const auto features = features_with_abi(abi);
  const NodeConfig config;
  const Policy policy = egress_policy();
  const Plan plan = make_plan(policy, features, config, paths, request());
  ASSERT_EQ(plan.landlock.port_rules.size(), 1U);
  EXPECT_EQ(plan.landlock.port_rules[0].port, config.proxy_port);
  EXPECT_EQ(plan.landlock.port_rules[0].access, LANDLOCK_ACCESS_NET_CONNECT_TCP);
  EXPECT_EQ(plan.landlock.handled_net,
            LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP);
  EXPECT_TRUE(plan.filter.inet);
  EXPECT_TRUE(plan.filter.unix_sockets);
  check_golden("explain-egress-abi" + std::to_string(abi),
               explain_plan(plan, policy, features, config));
}

INSTANTIATE_TEST_SUITE_P(Abi, EgressPlanPerAbi, ::testing::Values(6, 7));

// docs/launcher.md, "Egress: the module's own network namespace": per launch mode, what keeps an
// egress module to the proxy, and the one table that says so to the launcher, sandbox-check and the
// report.
TEST(PlanEgressConfinement, NamespaceAsRootElsePortOnlyOnlyWhereTheNodeAcceptsIt) {
  FakePaths paths;
  const Policy policy = parse_policy(
      R"({"bundle": "/srv/mod", "net": "egress-allowlist", "ipc_isolation": "best-effort"})");
  NodeConfig config;
  auto root = features_with_abi(7);
  EXPECT_EQ(egress_confinement(root, config), EgressConfinement::Namespace);
  auto verdict = evaluate_capability(CapabilityRow::EgressAllowlist, root, config);
  EXPECT_EQ(verdict.status, CapabilityStatus::Enforced);
  EXPECT_NE(verdict.reason.find("network namespace"), std::string::npos) << verdict.reason;
  EXPECT_NE(verdict.reason.find("sandbox-exec: a relay"), std::string::npos) << verdict.reason;
  EXPECT_NO_THROW((void)make_plan(policy, root, config, paths, request()));

  auto user = root;
  user.running_as_root = false;
  user.network_namespaces = false;
  auto no_netns = root;
  no_netns.network_namespaces = false;
  auto unprobed = root;
  unprobed.network_namespaces_probed = false;
  for (const auto& features : {user, no_netns, unprobed}) {
    EXPECT_EQ(egress_confinement(features, config), EgressConfinement::Refused);
    verdict = evaluate_capability(CapabilityRow::EgressAllowlist, features, config);
    EXPECT_EQ(verdict.status, CapabilityStatus::Unavailable);
    try {
      (void)make_plan(policy, features, config, paths, request());
      ADD_FAILURE() << "expected a refusal";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Unenforceable);
      EXPECT_NE(std::string(e.what()).find("accept_port_only_egress"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_NE(evaluate_capability(CapabilityRow::EgressAllowlist, user, config)
                .reason.find("the agent is not root"),
            std::string::npos);

  NodeConfig accepting;
  accepting.accept_port_only_egress = true;
  for (const auto& features : {user, no_netns}) {
    EXPECT_EQ(egress_confinement(features, accepting), EgressConfinement::PortOnly);
    verdict = evaluate_capability(CapabilityRow::EgressAllowlist, features, accepting);
    EXPECT_EQ(verdict.status, CapabilityStatus::PortOnly);
    EXPECT_EQ(to_string(verdict.status), "port only");
    EXPECT_NE(verdict.reason.find("shared"), std::string::npos) << verdict.reason;
    const Plan plan = make_plan(policy, features, accepting, paths, request());
    // filesystem, setid-files and the egress row, which alone is port only.
    ASSERT_EQ(plan.relies_on.size(), 3U);
    EXPECT_EQ(
        std::count_if(plan.relies_on.begin(), plan.relies_on.end(),
                      [](const auto& row) { return row.status == CapabilityStatus::PortOnly; }),
        1);
  }
  // Root with namespaces: the key changes nothing.
  EXPECT_EQ(egress_confinement(root, accepting), EgressConfinement::Namespace);
  // Landlock below ABI 4 is refused whatever the key says.
  auto old = user;
  old.landlock_abi = 3;
  EXPECT_EQ(evaluate_capability(CapabilityRow::EgressAllowlist, old, accepting).status,
            CapabilityStatus::Unavailable);
  // A policy that is not an egress policy does not care.
  EXPECT_NO_THROW(
      (void)make_plan(parse_policy(R"({"bundle": "/srv/mod", "ipc_isolation": "best-effort"})"),
                      user, config, paths, request()));
}

// The registry holds it once, with its three rows, each the table's own entry.
TEST(NetworkMechanism, IsListedOnceWithItsRows) {
  EXPECT_EQ(std::count(mechanisms().begin(), mechanisms().end(), &kNetworkMechanism), 1);
  std::vector<CapabilityRow> rows;
  for (const auto& entry : kNetworkMechanism.rows) {
    rows.push_back(entry.row);
    EXPECT_EQ(capability_entry(entry.row).key, entry.key);
  }
  EXPECT_EQ(rows,
            (std::vector<CapabilityRow>{CapabilityRow::EgressAllowlist, CapabilityRow::EgressAny,
                                        CapabilityRow::EgressNetns}));
}

// Its filter rules are the whole filter's inet rules: nothing without inet, and with it a run of
// rules, right after socket(2)'s family rules, on socket, sendto, sendmsg and sendmmsg alone.
TEST(NetworkMechanism, SocketRulesAreTheFiltersInetRules) {
  for (int index = 0; index < seccomp::kVariantCount; ++index) {
    const auto variant = seccomp::variant_from_index(index);
    std::vector<seccomp::Rule> own;
    kNetworkMechanism.socket_rules(variant, own);
    if (!variant.inet) {
      EXPECT_TRUE(own.empty()) << variant.name();
      continue;
    }
    ASSERT_FALSE(own.empty()) << variant.name();
    for (const auto& rule : own) {
      EXPECT_TRUE(rule.syscall == "socket" || rule.syscall == "sendto" ||
                  rule.syscall == "sendmsg" || rule.syscall == "sendmmsg")
          << rule.syscall;
    }
    const auto all = seccomp::rules_for(variant);
    const auto at = std::search(all.begin(), all.end(), own.begin(), own.end(),
                                [](const seccomp::Rule& a, const seccomp::Rule& b) {
                                  return a.syscall == b.syscall && a.args == b.args &&
                                         a.errno_value == b.errno_value && a.why == b.why;
                                });
    EXPECT_NE(at, all.end()) << variant.name();
  }
}

// The one answer to "does this module get a network namespace of its own": the plan's
// own_network_namespace, which sandbox-run's step network, --explain's world and the module's
// own sysfs all read.
TEST(NetworkMechanism, OwnNetworkNamespaceIsDecidedOnceInThePlan) {
  FakePaths paths;
  const NodeConfig config;
  const auto root = features_with_abi(7);
  auto user = root;
  user.running_as_root = false;
  const Policy none = parse_policy(R"({"bundle": "/srv/mod"})");
  const Policy egress = egress_policy();
  seccomp::FilterVariant shared;
  seccomp::FilterVariant own = shared;
  own.own_namespaces = true;

  // An egress module: wherever a namespace confines it, whatever its world.
  EXPECT_TRUE(own_network_namespace(egress, root, config, shared));
  EXPECT_FALSE(own_network_namespace(egress, user, config, own));
  // Any other: where its world has its own namespaces.
  EXPECT_FALSE(own_network_namespace(none, root, config, shared));
  EXPECT_TRUE(own_network_namespace(none, root, config, own));

  LaunchRequest world = request();
  world.world.own_namespaces = true;
  world.own_mounts = true;
  const Plan with = make_plan(none, root, config, paths, world);
  EXPECT_TRUE(with.own_network_namespace);
  EXPECT_TRUE(with.mounts.own_sysfs);
  const Plan bare = make_plan(none, root, config, paths, request());
  EXPECT_FALSE(bare.own_network_namespace);
  EXPECT_FALSE(bare.mounts.own_sysfs);
  // A bare sandbox-exec of an egress module as root makes its relay's namespace: its own too.
  EXPECT_TRUE(make_plan(egress, root, config, paths, request()).own_network_namespace);
}

}  // namespace
}  // namespace oarbank
