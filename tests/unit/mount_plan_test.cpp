// Issue 12, a module's own mounts: what the plan asks the child to mount (pure), the Landlock
// grants that go with it, the report's mounts.* rows and the known limit they shrink.
#include "plan/mount_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "config/node_config.hpp"
#include "plan/capabilities.hpp"
#include "plan/landlock_rights.hpp"
#include "plan/plan.hpp"
#include "sys/landlock_abi.hpp"

namespace oarbank {
namespace {

Policy policy_from(const std::string& text) { return parse_policy(text); }

const char* kPolicy = R"({"bundle": "/srv/mod", "work": "/jobs/1/work", "temp": "/jobs/1/tmp",
                          "data": ["/datasets/a"], "net": "none",
                          "ipc_isolation": "best-effort"})";

TEST(MountPlan, ShmSizeIsTheNodesBoundedByTheReservation) {
  NodeConfig config;
  EXPECT_EQ(make_mount_plan(policy_from(kPolicy), config, 1, 2, {}).shm_size_bytes, 64ULL << 20);
  config.module_shm_max_bytes = 1 << 20;
  EXPECT_EQ(make_mount_plan(policy_from(kPolicy), config, 1, 2, {}).shm_size_bytes, 1ULL << 20);
  Policy reserved = policy_from(kPolicy);
  reserved.reservations.memory_bytes = 65536;
  EXPECT_EQ(make_mount_plan(reserved, config, 1, 2, {}).shm_size_bytes, 65536U);
}

TEST(MountPlan, ShmOptionsNameTheModuleUserAndTheBound) {
  NodeConfig config;
  config.module_shm_max_bytes = 1 << 20;
  const MountPlan plan = make_mount_plan(policy_from(kPolicy), config, 61184, 61185, {});
  EXPECT_EQ(shm_mount_options(plan), "size=1048576,nr_inodes=256,mode=0700,uid=61184,gid=61185");
}

TEST(MountPlan, WritableDirectoriesAreNoexecUnlessExecWritable) {
  const std::vector<std::string> dirs{"/jobs/1/work", "/datasets/a"};
  EXPECT_TRUE(make_mount_plan(policy_from(kPolicy), {}, 1, 2, dirs).writable_noexec);
  Policy exec = policy_from(kPolicy);
  exec.exec_writable = true;
  const MountPlan plan = make_mount_plan(exec, {}, 1, 2, dirs);
  EXPECT_FALSE(plan.writable_noexec);
  EXPECT_EQ(plan.writable_dirs, dirs);
}

TEST(MountPlan, TheMountPointsWhoseRulesAreTakenAgain) {
  for (const char* path : {"/dev/shm", "/proc", "/dev/pts"})
    EXPECT_TRUE(is_module_mount_point(path));
  for (const char* path : {"/dev/ptmx", "/dev", "/proc/self", "/dev/shm/x", "/tmp"})
    EXPECT_FALSE(is_module_mount_point(path)) << path;
}

TEST(MountPlan, EveryRuleOnItsSysfsIsTakenAgain) {
  for (const char* path : {"/sys", "/sys/devices/system/cpu", "/sys/class/net"})
    EXPECT_TRUE(is_on_module_sysfs(path)) << path;
  for (const char* path : {"/system", "/sysx/a", "/", "/proc/sys", "/usr/sys"})
    EXPECT_FALSE(is_on_module_sysfs(path)) << path;
}

class AllPaths : public PathOracle {
 public:
  [[nodiscard]] PathKind kind(const std::string& path) const override {
    if (path == "/dev/ptmx" || path.starts_with("/dev/n") || path.starts_with("/dev/z") ||
        path.starts_with("/dev/r") || path.starts_with("/dev/u") || path.starts_with("/dev/f"))
      return PathKind::File;
    return PathKind::Directory;
  }
  [[nodiscard]] std::string canonical(const std::string& path) const override { return path; }
};

KernelFeatures root_node(int abi) {
  KernelFeatures features;
  features.landlock = LandlockState::Present;
  features.landlock_abi = abi;
  features.seccomp_filter = true;
  features.running_as_root = true;
  features.mount_admin = true;
  return features;
}

const LandlockPathRule* rule_for(const Plan& plan, const std::string& path) {
  for (const auto& rule : plan.landlock.path_rules) {
    if (rule.path == path) return &rule;
  }
  return nullptr;
}

TEST(MountPlan, OwnMountsGrantShmAndThePtyAndNothingElseChanges) {
  LaunchRequest request;
  request.argv = {"/srv/mod/run"};
  const Plan shared = make_plan(policy_from(kPolicy), root_node(7), {}, AllPaths(), request);
  EXPECT_FALSE(shared.mounts.enabled);
  for (const char* path : {"/dev/shm", "/dev/pts", "/dev/ptmx"})
    EXPECT_EQ(rule_for(shared, path), nullptr) << path << ": the node's are everyone's";

  request.own_mounts = true;
  const Plan own = make_plan(policy_from(kPolicy), root_node(7), {}, AllPaths(), request);
  ASSERT_TRUE(own.mounts.enabled);
  EXPECT_EQ(own.mounts.uid, own.identity.uid);
  EXPECT_EQ(own.mounts.gid, own.identity.gid);
  EXPECT_EQ(own.mounts.writable_dirs,
            (std::vector<std::string>{"/jobs/1/work", "/datasets/a", "/jobs/1/tmp"}));
  const auto* shm = rule_for(own, "/dev/shm");
  ASSERT_NE(shm, nullptr);
  EXPECT_NE(shm->access & LANDLOCK_ACCESS_FS_MAKE_REG, 0U);
  EXPECT_NE(shm->access & LANDLOCK_ACCESS_FS_WRITE_FILE, 0U);
  EXPECT_EQ(shm->access & LANDLOCK_ACCESS_FS_EXECUTE, 0U);
  const auto* pts = rule_for(own, "/dev/pts");
  const auto* ptmx = rule_for(own, "/dev/ptmx");
  ASSERT_NE(pts, nullptr);
  ASSERT_NE(ptmx, nullptr);
  // Device ioctls on the pty (TIOCGPTN, TIOCSPTLCK, termios), governed from ABI 5.
  EXPECT_NE(ptmx->access & LANDLOCK_ACCESS_FS_IOCTL_DEV, 0U);
  EXPECT_NE(pts->access & LANDLOCK_ACCESS_FS_IOCTL_DEV, 0U);
  EXPECT_EQ(pts->access & LANDLOCK_ACCESS_FS_EXECUTE, 0U);
  // Below ABI 5 the right is not handled, so it is not in the rule either.
  const Plan abi4 = make_plan(policy_from(kPolicy), root_node(4), {}, AllPaths(), request);
  EXPECT_EQ(rule_for(abi4, "/dev/ptmx")->access & LANDLOCK_ACCESS_FS_IOCTL_DEV, 0U);
  // Everything else is the same plan.
  EXPECT_EQ(own.landlock.path_rules.size(), shared.landlock.path_rules.size() + 3);
  EXPECT_EQ(own.filter.name(), shared.filter.name());
}

TEST(MountRows, EnforcedOnlyForRootWithCapSysAdminAndTheKeyOn) {
  const std::vector<CapabilityRow> rows{CapabilityRow::MountsShm, CapabilityRow::MountsTmp,
                                        CapabilityRow::MountsNoexec, CapabilityRow::MountsProc,
                                        CapabilityRow::MountsPts};
  NodeConfig config;
  KernelFeatures features = root_node(7);
  for (auto row : rows) {
    const auto verdict = evaluate_capability(row, features, config);
    EXPECT_EQ(verdict.status, CapabilityStatus::Enforced) << row_key(row);
    EXPECT_NE(verdict.reason.find("sandbox-run as root"), std::string::npos) << verdict.reason;
  }
  EXPECT_EQ(why_no_own_mounts(features, config), "");

  KernelFeatures user = features;
  user.running_as_root = false;
  NodeConfig off;
  off.module_mounts = false;
  KernelFeatures no_admin = features;
  no_admin.mount_admin = false;
  for (const auto& [f, c, words] :
       {std::tuple{user, config, "not root"}, std::tuple{features, off, "module_mounts is false"},
        std::tuple{no_admin, config, "CAP_SYS_ADMIN"}}) {
    for (auto row : rows) {
      const auto verdict = evaluate_capability(row, f, c);
      EXPECT_EQ(verdict.status, CapabilityStatus::Unavailable) << row_key(row);
      EXPECT_NE(verdict.reason.find(words), std::string::npos) << verdict.reason;
    }
  }
}

TEST(MountRows, TheKnownLimitShrinksWhereTheMountsAreMade) {
  const auto own = evaluate_capability(CapabilityRow::ExecWritableScope, root_node(7), {});
  EXPECT_EQ(own.status, CapabilityStatus::NotPromised);
  EXPECT_NE(own.reason.find("interpreter"), std::string::npos);
  EXPECT_NE(own.reason.find("noexec"), std::string::npos);
  KernelFeatures user = root_node(7);
  user.running_as_root = false;
  const auto shared = evaluate_capability(CapabilityRow::ExecWritableScope, user, {});
  EXPECT_EQ(shared.status, CapabilityStatus::NotPromised);
  EXPECT_NE(shared.reason.find("the dynamic loader"), std::string::npos) << shared.reason;
}

TEST(MountConfig, KeysParseAndAreBounded) {
  const NodeConfig config =
      parse_node_config(R"({"module_mounts": false, "module_shm_max_bytes": 1048576})", "test");
  EXPECT_FALSE(config.module_mounts);
  EXPECT_EQ(config.module_shm_max_bytes, 1048576U);
  EXPECT_THROW(parse_node_config(R"({"module_mounts": 1})", "test"), ConfigError);
  EXPECT_THROW(parse_node_config(R"({"module_shm_max_bytes": 100})", "test"), ConfigError);
  EXPECT_TRUE(NodeConfig{}.module_mounts);
}

}  // namespace
}  // namespace oarbank
