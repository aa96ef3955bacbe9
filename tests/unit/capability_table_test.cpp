// Issue 11: the capability table holds each row whole (id, the ABI or fact it needs, its
// evaluator, which policies need it, its reasons), and the Landlock ABIs are named.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "plan/capabilities.hpp"
#include "plan/landlock_rights.hpp"
#include "plan/mechanism.hpp"
#include "sys/landlock_abi.hpp"

namespace oarbank {
namespace {

using landlock::Abi;

TEST(LandlockAbiNames, EachAbiHasItsFirstLinuxRelease) {
  // The releases that first answered each version to LANDLOCK_CREATE_RULESET_VERSION.
  EXPECT_STREQ(landlock::linux_release(Abi::V1), "Linux 5.13");
  EXPECT_STREQ(landlock::linux_release(Abi::V2), "Linux 5.19");
  EXPECT_STREQ(landlock::linux_release(Abi::V3), "Linux 6.2");
  EXPECT_STREQ(landlock::linux_release(Abi::V4), "Linux 6.7");
  EXPECT_STREQ(landlock::linux_release(Abi::V5), "Linux 6.10");
  EXPECT_STREQ(landlock::linux_release(Abi::V6), "Linux 6.12");
  EXPECT_STREQ(landlock::linux_release(Abi::V7), "Linux 6.15");
  EXPECT_STREQ(landlock::linux_release(0), "Linux ?");
  EXPECT_STREQ(landlock::linux_release(landlock::number(landlock::kNewestKnownAbi) + 1), "Linux ?");
}

TEST(LandlockAbiNames, SupportsComparesTheKernelsNumberWithANamedAbi) {
  EXPECT_FALSE(landlock::supports(0, Abi::V1));
  EXPECT_TRUE(landlock::supports(0, Abi::Unsupported));
  EXPECT_FALSE(landlock::supports(3, Abi::V4));
  EXPECT_TRUE(landlock::supports(4, Abi::V4));
  EXPECT_TRUE(landlock::supports(9, Abi::V7));  // a kernel newer than this build
  EXPECT_EQ(landlock::ruleset_attr_size(3), sizeof(std::uint64_t));
  EXPECT_EQ(landlock::ruleset_attr_size(4), 2 * sizeof(std::uint64_t));
  EXPECT_EQ(landlock::ruleset_attr_size(6), sizeof(landlock::RulesetAttr));
}

TEST(CapabilityTable, EveryRowHasOneEntryWithAUniqueId) {
  std::set<std::string> keys;
  for (const auto& entry : capability_table()) {
    EXPECT_EQ(&capability_entry(entry.row), &entry) << entry.key;
    EXPECT_TRUE(keys.insert(std::string(entry.key)).second) << "duplicate id " << entry.key;
    EXPECT_FALSE(entry.title.empty()) << entry.key;
    ASSERT_NE(entry.evaluate, nullptr) << entry.key;
    // A row names what decides it: a Landlock ABI, or a fact, or (a known limit) its reason.
    EXPECT_TRUE(entry.landlock != Abi::Unsupported || entry.fact != CapabilityFact::None ||
                !entry.reason.empty())
        << entry.key;
    if (entry.fact == CapabilityFact::CgroupController) {
      EXPECT_FALSE(entry.controller.empty()) << entry.key;
    }
  }
  EXPECT_EQ(all_rows().size(), capability_table().size());
}

// plan/mechanisms.cpp: each mechanism with a pair of its own is listed once, and the table holds
// each of its rows once, as its pair wrote it (evaluator and predicate included).
TEST(CapabilityTable, EachMechanismsRowsAreInTheTableOnce) {
  std::set<std::string> names;
  std::set<CapabilityRow> rows;
  for (const Mechanism* mechanism : mechanisms()) {
    EXPECT_TRUE(names.insert(std::string(mechanism->name)).second) << mechanism->name;
    for (const auto& entry : mechanism->rows) {
      EXPECT_TRUE(rows.insert(entry.row).second) << entry.key << " in two mechanisms";
      const CapabilityEntry& in_table = capability_entry(entry.row);
      EXPECT_EQ(in_table.key, entry.key);
      EXPECT_EQ(in_table.evaluate, entry.evaluate) << entry.key;
      EXPECT_EQ(in_table.needed_by, entry.needed_by) << entry.key;
      EXPECT_EQ(in_table.plan_rank, entry.plan_rank) << entry.key;
    }
  }
  EXPECT_GE(names.size(), 2U);  // network and cgroup
}

TEST(CapabilityTable, RowsAPolicyNeedsHaveDistinctPlanRanks) {
  std::set<int> ranks;
  for (const auto& entry : capability_table()) {
    if (entry.needed_by == nullptr) continue;
    EXPECT_TRUE(ranks.insert(entry.plan_rank).second) << entry.key;
  }
}

TEST(CapabilityTable, LandlockRowsNameTheirAbi) {
  EXPECT_EQ(capability_entry(CapabilityRow::Filesystem).landlock, landlock::kFilesystemFloorAbi);
  EXPECT_EQ(capability_entry(CapabilityRow::EgressAllowlist).landlock, Abi::V4);
  EXPECT_EQ(capability_entry(CapabilityRow::Ipc).landlock, Abi::V6);
  // Each Landlock row is unavailable one ABI below its entry's and enforced at it, and its
  // reason names the ABI and its release.
  KernelFeatures features;
  features.landlock = LandlockState::Present;
  features.seccomp_filter = true;
  features.running_as_root = true;
  features.network_namespaces_probed = true;
  features.network_namespaces = true;
  NodeConfig config;
  for (const auto& entry : capability_table()) {
    if (entry.landlock == Abi::Unsupported || entry.fact == CapabilityFact::GpuDeviceNodes)
      continue;
    const int abi = landlock::number(entry.landlock);
    features.landlock_abi = abi - 1;
    auto below = evaluate_capability(entry.row, features, config);
    EXPECT_EQ(below.status, CapabilityStatus::Unavailable) << entry.key;
    EXPECT_NE(below.reason.find(std::string("needs Landlock ABI ") + std::to_string(abi) + " (" +
                                landlock::linux_release(entry.landlock) + ")"),
              std::string::npos)
        << below.reason;
    features.landlock_abi = abi;
    EXPECT_EQ(evaluate_capability(entry.row, features, config).status, CapabilityStatus::Enforced)
        << entry.key;
  }
}

TEST(CapabilityTable, NeededByIsTheEntrysPredicateInPlanOrder) {
  Policy policy;
  policy.net = NetMode::EgressAny;
  policy.ipc_isolation = IpcIsolation::Required;
  policy.gpu = GpuMode::Compute;
  policy.reservations.cpu = 1.0;
  policy.reservations.memory_bytes = 1 << 20;
  NodeConfig config;
  config.hard_limits = true;
  config.pids_max = 64;
  const std::vector<CapabilityRow> expected{CapabilityRow::Filesystem,  CapabilityRow::SetidFiles,
                                            CapabilityRow::EgressAny,   CapabilityRow::Ipc,
                                            CapabilityRow::GpuDevices,  CapabilityRow::LimitCpu,
                                            CapabilityRow::LimitMemory, CapabilityRow::LimitPids};
  EXPECT_EQ(rows_needed_by(policy, config), expected);
  for (auto row : expected) {
    const auto& entry = capability_entry(row);
    ASSERT_NE(entry.needed_by, nullptr) << entry.key;
    EXPECT_TRUE(entry.needed_by(policy, config)) << entry.key;
  }
  // Without hard_limits the node's limits are no policy's need; the known limits never are.
  config.hard_limits = false;
  EXPECT_FALSE(capability_entry(CapabilityRow::LimitPids).needed_by(policy, config));
  EXPECT_EQ(capability_entry(CapabilityRow::StatHiding).needed_by, nullptr);
  EXPECT_EQ(capability_entry(CapabilityRow::BrokerSockets).needed_by, nullptr);
}

}  // namespace
}  // namespace oarbank
