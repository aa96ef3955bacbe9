// The plan, per Landlock ABI: golden --explain documents, refusals, and the rule shapes the
// kernel requires (file rules narrowed to file rights, rights within the handled set).
#include "plan/plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "plan/landlock_rights.hpp"
#include "plan/module_world.hpp"
#include "plan/plan_json.hpp"
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

Policy filesystem_policy() {
  return parse_policy(R"({
    "bundle": "/srv/mod", "runtime": ["/opt/python"], "tools": ["/usr/bin/ffmpeg"],
    "work": "/jobs/1/work", "data": ["/datasets/a"], "temp": "/jobs/1/tmp",
    "devices": {"gpu": "compute"}, "ipc_isolation": "best-effort"})");
}

class PlanPerAbi : public ::testing::TestWithParam<int> {};

TEST_P(PlanPerAbi, FilesystemPolicyGolden) {
  const int abi = GetParam();
  FakePaths paths;
  const auto features = features_with_abi(abi);
  const NodeConfig config;
  const Policy policy = filesystem_policy();
  const Plan plan = make_plan(policy, features, config, paths, request());
  check_golden("explain-filesystem-abi" + std::to_string(abi),
               explain_plan(plan, policy, features, config));
}

TEST_P(PlanPerAbi, RulesStayWithinWhatTheKernelAccepts) {
  const int abi = GetParam();
  FakePaths paths;
  const Plan plan =
      make_plan(filesystem_policy(), features_with_abi(abi), NodeConfig{}, paths, request());
  EXPECT_EQ(plan.landlock.abi, abi);
  EXPECT_EQ(plan.landlock.handled_fs, landlock::fs_rights_for_abi(abi));
  for (const auto& rule : plan.landlock.path_rules) {
    EXPECT_EQ(rule.access & ~plan.landlock.handled_fs, 0U) << rule.path;
    if (!rule.is_directory) {
      EXPECT_EQ(rule.access & ~landlock::file_rights(), 0U) << rule.path;
    }
  }
  // /lib32 is missing on this node: a base path, so skipped rather than refused.
  for (const auto& rule : plan.landlock.path_rules) EXPECT_NE(rule.path, "/lib32");
}

TEST_P(PlanPerAbi, WritableDirectoriesGetNoExecuteUnlessExecWritable) {
  const int abi = GetParam();
  FakePaths paths;
  const Plan plan =
      make_plan(filesystem_policy(), features_with_abi(abi), NodeConfig{}, paths, request());
  for (const auto& rule : plan.landlock.path_rules) {
    if (rule.path == "/jobs/1/work" || rule.path == "/jobs/1/tmp" || rule.path == "/datasets/a") {
      EXPECT_EQ(rule.access & LANDLOCK_ACCESS_FS_EXECUTE, 0U) << rule.path;
      EXPECT_NE(rule.access & LANDLOCK_ACCESS_FS_MAKE_REG, 0U) << rule.path;
    }
    if (rule.path == "/srv/mod") {
      EXPECT_EQ(rule.access, landlock::read_execute_rights());
    }
  }
}

TEST_P(PlanPerAbi, GpuNodesGetDeviceIoctlsFromAbi5) {
  const int abi = GetParam();
  FakePaths paths;
  const Plan plan =
      make_plan(filesystem_policy(), features_with_abi(abi), NodeConfig{}, paths, request());
  bool found = false;
  for (const auto& rule : plan.landlock.path_rules) {
    if (rule.path == "/dev/nvidia0") {
      found = true;
      EXPECT_EQ((rule.access & LANDLOCK_ACCESS_FS_IOCTL_DEV) != 0, abi >= 5);
      EXPECT_FALSE(rule.is_directory);
    }
  }
  EXPECT_TRUE(found);
}

INSTANTIATE_TEST_SUITE_P(Abi, PlanPerAbi, ::testing::Values(3, 4, 5, 6, 7));

// For every ABI from none to the newest, the plan refuses exactly the policies whose rows the
// capability table says this node cannot enforce.
TEST(PlanRefusals, MatchTheCapabilityTableForEveryAbi) {
  const std::vector<std::string> policies = {
      R"({"bundle": "/srv/mod", "ipc_isolation": "best-effort"})",
      R"({"bundle": "/srv/mod"})",
      R"({"bundle": "/srv/mod", "net": "egress-allowlist", "ipc_isolation": "best-effort"})",
      R"({"bundle": "/srv/mod", "net": "egress-allowlist"})",
      R"({"bundle": "/srv/mod", "net": "egress-any", "ipc_isolation": "best-effort"})",
  };
  // Expected "can run" per ABI 0..7, per policy above.
  const std::vector<std::vector<bool>> expected = {
      {false, false, false, true, true, true, true, true},
      {false, false, false, false, false, false, true, true},
      {false, false, false, false, true, true, true, true},
      {false, false, false, false, false, false, true, true},
      {false, false, false, false, false, false, false, false},
  };
  FakePaths paths;
  for (std::size_t p = 0; p < policies.size(); ++p) {
    const Policy policy = parse_policy(policies[p]);
    for (int abi = 0; abi <= 7; ++abi) {
      const auto features = features_with_abi(abi);
      const bool table_says_runnable = unmet_capabilities(policy, features, NodeConfig{}).empty();
      bool planned = true;
      try {
        (void)make_plan(policy, features, NodeConfig{}, paths, request());
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Unenforceable);
        planned = false;
      }
      EXPECT_EQ(planned, table_says_runnable) << policies[p] << " at ABI " << abi;
      EXPECT_EQ(planned, expected[p][static_cast<std::size_t>(abi)])
          << policies[p] << " at ABI " << abi;
    }
  }
}

TEST(PlanRefusals, TheNodeCapLowersTheAbiAndSaysSo) {
  FakePaths paths;
  NodeConfig config;
  config.landlock_abi_max = 3;
  const Policy policy = parse_policy(
      R"({"bundle": "/srv/mod", "net": "egress-allowlist", "ipc_isolation": "best-effort"})");
  try {
    (void)make_plan(policy, features_with_abi(7), config, paths, request());
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unenforceable);
    EXPECT_NE(std::string(e.what()).find("net.egress-allowlist"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("caps Landlock at ABI 3"), std::string::npos) << e.what();
  }
}

TEST(PlanRefusals, DisabledLandlockIsToldApartFromMissing) {
  FakePaths paths;
  KernelFeatures features = features_with_abi(0);
  features.landlock = LandlockState::Disabled;
  const Policy policy = parse_policy(R"({"bundle": "/srv/mod", "ipc_isolation": "best-effort"})");
  try {
    (void)make_plan(policy, features, NodeConfig{}, paths, request());
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("disabled at boot"), std::string::npos) << e.what();
  }
  features.landlock = LandlockState::NotBuilt;
  try {
    (void)make_plan(policy, features, NodeConfig{}, paths, request());
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no Landlock"), std::string::npos) << e.what();
  }
}

TEST(PlanRefusals, NoSeccompMeansNothingRuns) {
  FakePaths paths;
  KernelFeatures features = features_with_abi(7);
  features.seccomp_filter = false;
  EXPECT_THROW((void)make_plan(parse_policy(R"({"bundle": "/srv/mod"})"), features, NodeConfig{},
                               paths, request()),
               Error);
}

TEST(PlanRefusals, MissingPolicyPathIsNamedWithItsPointer) {
  FakePaths paths;
  const Policy policy =
      parse_policy(R"({"bundle": "/srv/mod", "data": ["/datasets/a", "/srv/nowhere"]})");
  try {
    (void)make_plan(policy, features_with_abi(7), NodeConfig{}, paths, request());
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unenforceable);
    EXPECT_EQ(std::string(e.what()), "policy /data/1: /srv/nowhere does not exist on this node");
  }
}

// The parser refuses "/" and the kernel's trees as written; a link on the node (in the module's
// own bundle) leading there is refused by where it leads, naming both.
TEST(PlanRefusals, APolicyPathThatLeadsToTheRootOrAKernelTreeIsRefused) {
  for (const auto& [leads_to, problem] : std::vector<std::pair<std::string, std::string>>{
           {"/", "must not be the root directory"},
           {"/dev", "must not be in /dev (the kernel's own tree)"},
           {"/sys/kernel", "must not be in /sys (the kernel's own tree)"}}) {
    FakePaths paths;
    paths.kinds_["/srv/mod/rootlink"] = PathKind::Directory;
    paths.links_["/srv/mod/rootlink"] = leads_to;
    const Policy policy =
        parse_policy(R"({"bundle": "/srv/mod", "runtime": ["/srv/mod/rootlink"]})");
    try {
      (void)make_plan(policy, features_with_abi(7), NodeConfig{}, paths, request());
      FAIL() << "expected a refusal for " << leads_to;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Unenforceable);
      EXPECT_EQ(std::string(e.what()), "policy /runtime/0: /srv/mod/rootlink leads to " + leads_to +
                                           " on this node, and a policy path " + problem);
    }
  }
  // Where a link leads elsewhere, it is a rule like any other.
  FakePaths paths;
  paths.kinds_["/srv/mod/lib"] = PathKind::Directory;
  paths.links_["/srv/mod/lib"] = "/opt/python";
  EXPECT_NO_THROW(
      (void)make_plan(parse_policy(R"({"bundle": "/srv/mod", "runtime": ["/srv/mod/lib"]})"),
                      features_with_abi(7), NodeConfig{}, paths, request()));
}

TEST(PlanRefusals, GpuComputeWithoutDeviceNodes) {
  FakePaths paths;
  KernelFeatures features = features_with_abi(7);
  features.gpu_device_nodes.clear();
  try {
    (void)make_plan(filesystem_policy(), features, NodeConfig{}, paths, request());
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unenforceable);
    EXPECT_NE(std::string(e.what()).find("\"devices.gpu\""), std::string::npos) << e.what();
  }
}

TEST(PlanOverlap, WritableBeneathAReadExecuteRuleIsRefusedUnlessExecWritable) {
  FakePaths paths;
  paths.kinds_["/opt/jobs/1/work"] = PathKind::Directory;
  Policy policy = parse_policy(R"({"bundle": "/srv/mod", "work": "/opt/jobs/1/work"})");
  try {
    (void)make_plan(policy, features_with_abi(7), NodeConfig{}, paths, request());
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unenforceable);
    EXPECT_NE(std::string(e.what()).find("lies within /opt"), std::string::npos) << e.what();
  }
  policy.exec_writable = true;
  EXPECT_NO_THROW((void)make_plan(policy, features_with_abi(7), NodeConfig{}, paths, request()));
}

TEST(PlanOverlap, ThroughASymbolicLinkToo) {
  FakePaths paths;
  paths.kinds_["/jobs/w"] = PathKind::Directory;
  paths.links_["/jobs/w"] = "/srv/mod/inner";  // work is a link into the bundle
  const Policy policy = parse_policy(R"({"bundle": "/srv/mod", "work": "/jobs/w"})");
  EXPECT_THROW((void)make_plan(policy, features_with_abi(7), NodeConfig{}, paths, request()),
               Error);
}

TEST(PlanOverlap, ReadOnlyBeneathWritableIsRefused) {
  FakePaths paths;
  paths.kinds_["/jobs/1/work/rt"] = PathKind::Directory;
  const Policy policy = parse_policy(
      R"({"bundle": "/srv/mod", "runtime": ["/jobs/1/work/rt"], "work": "/jobs/1/work", "exec_writable": true})");
  try {
    (void)make_plan(policy, features_with_abi(7), NodeConfig{}, paths, request());
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("would be writable"), std::string::npos) << e.what();
  }
}

TEST(PlanOverlap, SeparateTreesAreFine) {
  FakePaths paths;
  EXPECT_NO_THROW(
      (void)make_plan(filesystem_policy(), features_with_abi(7), NodeConfig{}, paths, request()));
}

TEST(PlanIdentity, RootBecomesTheModuleUserAndOthersStayThemselves) {
  FakePaths paths;
  NodeConfig config;
  config.module_uid = 4242;
  config.module_gid = 4343;
  const Policy policy = parse_policy(R"({"bundle": "/srv/mod"})");
  auto features = features_with_abi(7);
  Plan plan = make_plan(policy, features, config, paths, request());
  EXPECT_TRUE(plan.identity.change);
  EXPECT_EQ(plan.identity.uid, 4242U);
  EXPECT_EQ(plan.identity.gid, 4343U);
  features.running_as_root = false;
  plan = make_plan(policy, features, config, paths, request());
  EXPECT_FALSE(plan.identity.change);
}

// Issue 12's review: the world sandbox-run makes, decided once (plan/module_world.hpp) for the
// run and its --explain, and shown in --explain's "world" from the plan.
TEST(PlanWorld, DecidedAsTheRunMakesIt) {
  NodeConfig config;
  WorldFacts facts{.root = true, .leaf = true};
  EXPECT_EQ(module_world_for(config, facts), (seccomp::ModuleWorld{true, false, true}));
  facts.own_user = true;
  EXPECT_EQ(module_world_for(config, facts), (seccomp::ModuleWorld{true, true, true}));
  facts.kept_terminal = true;  // a terminal handed in: not its own group
  EXPECT_EQ(module_world_for(config, facts), (seccomp::ModuleWorld{true, true, false}));
  facts = WorldFacts{.root = true, .egress = true, .leaf = true};  // port only: the node's
  EXPECT_EQ(module_world_for(config, facts), (seccomp::ModuleWorld{}));
  facts.namespace_confinement = true;
  EXPECT_EQ(module_world_for(config, facts), (seccomp::ModuleWorld{true, false, true}));
  facts = WorldFacts{.root = true, .leaf = false, .own_user = true};  // no leaf
  EXPECT_EQ(module_world_for(config, facts), (seccomp::ModuleWorld{true, true, false}));
  facts.root = false;
  EXPECT_EQ(module_world_for(config, facts), (seccomp::ModuleWorld{}));
  config.module_world = false;
  facts.root = true;
  EXPECT_EQ(module_world_for(config, facts), (seccomp::ModuleWorld{}));
}

// Attack review: +own-user lets the module set its own processes' scheduling policy and nice
// value by pid; the launcher then lowers RLIMIT_RTPRIO and RLIMIT_NICE to 0, so a caller's
// limits (a service's LimitRTPRIO=) never let a module's SCHED_FIFO loop starve the node.
TEST(PlanWorld, WhereTheFilterAllowsSchedulingTheRealtimeLimitsAreLowered) {
  FakePaths paths;
  NodeConfig config;
  config.module_uid = 61200;
  config.module_gid = 61200;
  const Policy policy = filesystem_policy();
  const auto features = features_with_abi(7);
  LaunchRequest r = request();
  r.world = seccomp::ModuleWorld{true, true, true};
  r.user_source = ModuleUserSource::Own;
  Plan plan = make_plan(policy, features, config, paths, r);
  ASSERT_TRUE(plan.filter.own_user);
  EXPECT_TRUE(plan.identity.no_realtime);
  r.world = seccomp::ModuleWorld{true, false, true};
  r.user_source = ModuleUserSource::ModuleUser;
  plan = make_plan(policy, features, config, paths, r);
  EXPECT_FALSE(plan.filter.own_user);
  // Session 15's review: pid 0 (itself) is allowed in every variant, so the limits are lowered
  // in every variant too.
  EXPECT_TRUE(plan.identity.no_realtime);
}

// Session 16's review: /dev/tty (the opener's controlling terminal) is granted where that can
// only be sandbox-run's pty of the module's own, never to a bare sandbox-exec, whose caller's
// terminal may be the operator's.
TEST(PlanWorld, DevTtyIsGrantedOnlyWhenTheTerminalIsTheModulesOwn) {
  FakePaths paths;
  paths.kinds_["/dev/tty"] = PathKind::File;
  const Policy policy = filesystem_policy();
  const auto features = features_with_abi(7);
  LaunchRequest r = request();
  auto tty_rule = [&](const Plan& plan) -> const LandlockPathRule* {
    for (const auto& rule : plan.landlock.path_rules) {
      if (rule.path == "/dev/tty") return &rule;
    }
    return nullptr;
  };
  EXPECT_EQ(tty_rule(make_plan(policy, features, NodeConfig{}, paths, r)), nullptr);
  r.own_terminal = true;
  const Plan plan = make_plan(policy, features, NodeConfig{}, paths, r);
  const auto* rule = tty_rule(plan);
  ASSERT_NE(rule, nullptr);
  EXPECT_NE(rule->access & LANDLOCK_ACCESS_FS_IOCTL_DEV, 0U);
  EXPECT_EQ(rule->access & LANDLOCK_ACCESS_FS_EXECUTE, 0U);
  EXPECT_NE(rule->why.find("never the operator's"), std::string::npos);
}

TEST(PlanWorld, ExplainShowsTheModulesOwnWorldAndItsUser) {
  FakePaths paths;
  NodeConfig config;
  config.module_uid = 61200;
  config.module_gid = 61200;
  const Policy policy = filesystem_policy();
  const auto features = features_with_abi(7);
  LaunchRequest r = request();
  r.world = seccomp::ModuleWorld{true, true, true};
  r.own_mounts = true;
  r.user_source = ModuleUserSource::Own;
  Plan plan = make_plan(policy, features, config, paths, r);
  EXPECT_EQ(plan.identity.umask, 077);
  auto world = explain_plan(plan, policy, features, config)["world"];
  EXPECT_EQ(world["user"]["kind"], "own");
  EXPECT_EQ(world["user"]["uid"], 61200);
  EXPECT_EQ(world["user"]["umask"], "0077");
  // Its own uid: the node's pids_max as its RLIMIT_NPROC (IdentityPlan::process_limit).
  EXPECT_EQ(plan.identity.process_limit, *config.pids_max);
  EXPECT_TRUE(world["user"].contains("process_limit"));
  EXPECT_EQ(world["mounts"]["/proc"]["options"], "hidepid=invisible");
  // Its own user database (session 13): root, its user and nobody.
  EXPECT_TRUE(plan.mounts.own_user_database);
  EXPECT_NE(world["mounts"]["/etc/passwd"].get<std::string>().find("its own"), std::string::npos);
  EXPECT_EQ(world["mounts"]["/dev/pts"]["options"], "ptmxmode=0666,mode=0600,max=32");
  EXPECT_EQ(world["mounts"]["/dev/shm"]["size_bytes"], plan.mounts.shm_size_bytes);
  EXPECT_EQ(world["mounts"]["writable_dirs"]["options"], "nosuid,nodev,noexec");
  EXPECT_EQ(world["mounts"]["writable_dirs"]["paths"].size(), 3U);
  EXPECT_EQ(world["network_namespace"], "its own network namespace: loopback only");
  EXPECT_NE(world["ipc_namespace"].get<std::string>().find("its own"), std::string::npos);
  for (const char* bit : {"+own-namespaces", "+own-user", "+own-group"}) {
    EXPECT_TRUE(world["filter_variant_adds"].contains(bit)) << bit;
  }
  EXPECT_NE(world["filter_variant_adds"]["+own-group"].get<std::string>().find("TIOCSPGRP"),
            std::string::npos);
  // No lease yet: the run leases one; the plan's uid is not what it runs as.
  r.user_source = ModuleUserSource::OwnLeasedAtRun;
  plan = make_plan(policy, features, config, paths, r);
  world = explain_plan(plan, policy, features, config)["world"];
  EXPECT_EQ(world["user"]["uid"], "leased at run");
  // Its own uid without the rest of its world (module_world false): still umask 077.
  r.world = seccomp::ModuleWorld{};
  plan = make_plan(policy, features, config, paths, r);
  EXPECT_EQ(plan.identity.umask, 077);
  // The shared module_user: no umask of its own, no +own-user.
  r.world = seccomp::ModuleWorld{true, false, true};
  r.user_source = ModuleUserSource::ModuleUser;
  plan = make_plan(policy, features, config, paths, r);
  EXPECT_EQ(plan.identity.umask, -1);
  world = explain_plan(plan, policy, features, config)["world"];
  EXPECT_EQ(world["user"]["kind"], "module_user");
  EXPECT_EQ(world["user"]["umask"], "inherited");
  EXPECT_EQ(plan.identity.process_limit, 0U);   // the shared uid's count is every module's
  EXPECT_FALSE(plan.mounts.own_user_database);  // the node's accounts, as the uid is shared
  EXPECT_FALSE(world["user"].contains("process_limit"));
  EXPECT_FALSE(world["filter_variant_adds"].contains("+own-user"));
}

// Session 19's real-programs review: glibc's tmpfile(3) and ed write in /tmp whatever TMPDIR
// says. Its own /tmp, a tmpfs with temp's rights taken in its namespace, where nothing the
// module is given lies below /tmp; otherwise the node's, as before.
TEST(PlanWorld, ItsOwnTmpWhereNoPathOfThePolicyLiesBelowIt) {
  FakePaths paths;
  NodeConfig config;
  const auto features = features_with_abi(7);
  LaunchRequest r = request();
  r.own_mounts = true;
  Plan plan = make_plan(filesystem_policy(), features, config, paths, r);
  EXPECT_TRUE(plan.mounts.own_tmp);
  EXPECT_NE(plan.mounts.tmp_rights & LANDLOCK_ACCESS_FS_MAKE_REG, 0U);
  EXPECT_EQ(plan.mounts.tmp_rights & LANDLOCK_ACCESS_FS_EXECUTE, 0U);
  EXPECT_EQ(plan.mounts.tmp_rights & LANDLOCK_ACCESS_FS_IOCTL_DEV, 0U);
  EXPECT_EQ(
      explain_plan(plan, filesystem_policy(), features, config)["world"]["mounts"]["/tmp"]["type"],
      "tmpfs");
  // A temp below /tmp would be hidden by it: the node's /tmp.
  Policy below = filesystem_policy();
  below.temp = "/tmp/jobs/1";
  paths.kinds_["/tmp/jobs/1"] = PathKind::Directory;
  plan = make_plan(below, features, config, paths, r);
  EXPECT_FALSE(plan.mounts.own_tmp);
  // So would a path whose link leads below /tmp.
  paths.links_["/srv/mod"] = "/tmp/mod";
  plan = make_plan(filesystem_policy(), features, config, paths, r);
  EXPECT_FALSE(plan.mounts.own_tmp);
  paths.links_.clear();
  // The broker's socket below /tmp, with the grant: the node's too.
  Policy broker = filesystem_policy();
  broker.broker = true;
  config.broker_socket = "/tmp/broker.sock";
  plan = make_plan(broker, features, config, paths, r);
  EXPECT_FALSE(plan.mounts.own_tmp);
  // Without its own mounts: nothing of it.
  r.own_mounts = false;
  config.broker_socket = "/run/oarbank/broker.sock";
  plan = make_plan(filesystem_policy(), features, config, paths, r);
  EXPECT_FALSE(plan.mounts.own_tmp);
}

TEST(PlanEnvironment, CleanWithSandboxVariables) {
  const Policy policy = egress_policy();
  NodeConfig config;
  config.proxy_port = 8118;
  const auto env = module_environment(policy, config, request());
  auto has = [&](const std::string& entry) {
    return std::find(env.begin(), env.end(), entry) != env.end();
  };
  EXPECT_TRUE(has("TMPDIR=/jobs/1/tmp"));
  EXPECT_TRUE(has("HOME=/jobs/1/work"));
  EXPECT_TRUE(has("https_proxy=http://127.0.0.1:8118"));
  EXPECT_TRUE(has("HTTPS_PROXY=http://127.0.0.1:8118"));
  EXPECT_TRUE(has("http_proxy=http://127.0.0.1:8118"));
  EXPECT_TRUE(has("HTTP_PROXY=http://127.0.0.1:8118"));
  EXPECT_TRUE(has("NODE_USE_ENV_PROXY=1"));
  EXPECT_TRUE(has("OARBANK_BROKER=/run/oarbank/broker.sock"));
  EXPECT_TRUE(has("MODULE_ID=7f3a"));
  for (const auto& entry : env) {
    EXPECT_FALSE(entry.starts_with("NO_PROXY=") || entry.starts_with("no_proxy=") ||
                 entry.starts_with("ALL_PROXY=") || entry.starts_with("all_proxy="))
        << entry;
  }
}

// The home its own /etc/passwd names (session 18) is the HOME of its environment: the last
// --setenv HOME, else work, else temp.
TEST(PlanEnvironment, TheUserDatabasesHomeIsTheEnvironmentsHome) {
  const Policy policy = egress_policy();
  LaunchRequest r = request();
  EXPECT_EQ(module_home(policy, r), "/jobs/1/work");
  r.setenv = {{"HOME", "/first"}, {"HOME", "/last"}};
  EXPECT_EQ(module_home(policy, r), "/last");
  const auto env = module_environment(policy, NodeConfig{}, r);
  EXPECT_NE(std::find(env.begin(), env.end(), "HOME=/last"), env.end());
}

TEST(PlanEnvironment, NoProxyVariablesWithoutEgressAndNoBrokerWithoutGrant) {
  const auto env =
      module_environment(parse_policy(R"({"bundle": "/srv/mod"})"), NodeConfig{}, LaunchRequest{});
  for (const auto& entry : env) {
    EXPECT_EQ(entry.find("proxy"), std::string::npos) << entry;
    EXPECT_EQ(entry.find("PROXY"), std::string::npos) << entry;
    EXPECT_FALSE(entry.starts_with("OARBANK_BROKER=")) << entry;
    EXPECT_FALSE(entry.starts_with("TMPDIR=")) << entry;
  }
}

TEST(PlanEnvironment, TheCallerCannotOverrideWhatTheSandboxSets) {
  LaunchRequest r;
  r.setenv = {{"TMPDIR", "/tmp"}};
  EXPECT_THROW((void)module_environment(egress_policy(), NodeConfig{}, r), Error);
  r.setenv = {{"NO_PROXY", "*"}};
  EXPECT_THROW((void)module_environment(egress_policy(), NodeConfig{}, r), Error);
  r.setenv = {{"https_proxy", "http://evil:1"}};
  EXPECT_THROW((void)module_environment(egress_policy(), NodeConfig{}, r), Error);
  for (const char* name : {"No_Proxy", "ALL_Proxy", "Https_Proxy", "oarbank_broker"}) {
    r.setenv = {{name, "x"}};
    EXPECT_THROW((void)module_environment(egress_policy(), NodeConfig{}, r), Error) << name;
  }
  r.setenv = {{"PATH", "/srv/mod/bin:/usr/bin"}};
  const auto env = module_environment(egress_policy(), NodeConfig{}, r);
  EXPECT_EQ(std::count(env.begin(), env.end(), std::string("PATH=/srv/mod/bin:/usr/bin")), 1);
  EXPECT_EQ(std::count_if(env.begin(), env.end(),
                          [](const std::string& e) { return e.starts_with("PATH="); }),
            1);
}

}  // namespace
}  // namespace oarbank
