// Issue 11: the cgroup leaf's code (src/supervise/cgroup_leaf.cpp) against a prepared
// directory tree standing in for the cgroup2 file system. The test plays the kernel's part
// through cgroup_dir_ops: a leaf it makes gets empty interface files, and removing it takes
// them. No root and no cgroup2 needed.
#include "supervise/cgroup_leaf.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "plan/mechanism_cgroup.hpp"
#include "policy/module_id.hpp"
#include "probe/cgroup_facts.hpp"
#include "sys/error.hpp"
#include "sys/text_file.hpp"

namespace oarbank {
namespace {

namespace fs = std::filesystem;

// The interface files the fake kernel leaves out of the next leaves it makes.
std::set<std::string> g_missing_files;

int fake_mkdir(const char* path, mode_t mode) {
  if (::mkdir(path, mode) != 0) return -1;
  for (const char* file : {"cgroup.procs", "cgroup.kill", "cgroup.freeze", "cpu.max", "memory.max",
                           "memory.swap.max", "memory.oom.group", "pids.max"}) {
    if (!g_missing_files.contains(file)) std::ofstream(fs::path(path) / file);
  }
  std::ofstream(fs::path(path) / "cgroup.events") << "populated 0\nfrozen 0\n";
  return 0;
}

int fake_rmdir(const char* path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    errno = ENOENT;
    return -1;
  }
  for (const auto& entry : fs::directory_iterator(path)) {
    if (entry.is_directory()) {  // a child cgroup: the kernel refuses
      errno = EBUSY;
      return -1;
    }
  }
  for (const auto& entry : fs::directory_iterator(path)) fs::remove(entry.path());
  return ::rmdir(path);
}

std::string read(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class CgroupLeafTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "oarbank-cgroup-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    parent_ = root_ / "system.slice" / "oarbank-agent.service";
    fs::create_directories(parent_);
    std::ofstream(parent_ / "cgroup.controllers") << "cpu memory pids\n";
    std::ofstream(parent_ / "cgroup.subtree_control");
    std::ofstream(parent_ / "cgroup.procs");
    place_.mount_point = root_.string();
    place_.parent = parent_.string();
    saved_ = cgroup_dir_ops;
    cgroup_dir_ops = {fake_mkdir, fake_rmdir};
    g_missing_files.clear();
  }
  void TearDown() override {
    cgroup_dir_ops = saved_;
    g_missing_files.clear();
    fs::remove_all(root_);
  }

  fs::path root_;
  fs::path parent_;
  CgroupPlace place_;
  CgroupDirOps saved_{};
};

LeafLimits all_limits() {
  LeafLimits limits;
  limits.cpu_max = "50000 100000";
  limits.memory_max = 1ULL << 30;
  limits.pids_max = 64;
  limits.controllers = {"cpu", "memory", "pids"};
  limits.required = true;
  return limits;
}

TEST_F(CgroupLeafTest, TheLeafIsMadeUnderTheParentWithEveryLimitWritten) {
  std::ofstream(parent_ / "cgroup.subtree_control") << "cpu memory pids\n";
  {
    auto leaf = CgroupLeaf::create(place_, leaf_name_for("job"), all_limits());
    const fs::path path = parent_ / "oarbank-job";
    EXPECT_EQ(leaf.path(), path.string());
    EXPECT_GE(leaf.dir_fd(), 0);
    EXPECT_EQ(read(path / "pids.max"), "64");
    EXPECT_EQ(read(path / "memory.max"), "1073741824");
    EXPECT_EQ(read(path / "memory.swap.max"), "0");   // no swapping instead of the limit
    EXPECT_EQ(read(path / "memory.oom.group"), "1");  // one OOM kill takes the whole module
    EXPECT_EQ(read(path / "cpu.max"), "50000 100000");
    // Already enabled: cgroup.subtree_control is not written.
    EXPECT_EQ(read(parent_ / "cgroup.subtree_control"), "cpu memory pids\n");
    // Not the parent's own cgroup: no supervisor leaf.
    EXPECT_FALSE(fs::exists(parent_ / std::string(kSupervisorLeaf)));
  }
  // The destructor kills (cgroup.kill) and removes the leaf.
  EXPECT_FALSE(fs::exists(parent_ / "oarbank-job"));
}

TEST_F(CgroupLeafTest, AControllerNotYetEnabledIsEnabledFromASupervisorLeafInItsOwnCgroup) {
  place_.parent_is_own = true;
  LeafLimits limits;
  limits.pids_max = 32;
  limits.controllers = {"pids"};
  auto leaf = CgroupLeaf::create(place_, leaf_name_for("job"), limits);
  // The "no internal processes" rule: the agent moved into its supervisor leaf first.
  EXPECT_EQ(read(parent_ / std::string(kSupervisorLeaf) / "cgroup.procs"), "0");
  EXPECT_EQ(read(parent_ / "cgroup.subtree_control"), "+pids");
  EXPECT_EQ(read(parent_ / "oarbank-job" / "pids.max"), "32");
  EXPECT_TRUE(leaf.destroy());
  EXPECT_FALSE(fs::exists(parent_ / "oarbank-job"));
  EXPECT_TRUE(leaf.destroy());  // once gone, gone
}

TEST_F(CgroupLeafTest, AMissingControllerRefusesOnlyWhenLimitsAreRequired) {
  std::ofstream(parent_ / "cgroup.controllers") << "memory\n";
  LeafLimits limits;
  limits.pids_max = 32;
  limits.controllers = {"pids"};
  limits.required = true;
  try {
    CgroupLeaf::create(place_, leaf_name_for("job"), limits);
    FAIL() << "a required controller that is missing was not refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unenforceable);
    EXPECT_NE(
        std::string(e.what()).find("the pids controller is not available in " + parent_.string()),
        std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(parent_ / "oarbank-job"));
  // Best effort (pids.max without hard_limits): the leaf is made, the limit left out.
  limits.required = false;
  g_missing_files = {"pids.max"};
  auto leaf = CgroupLeaf::create(place_, leaf_name_for("job"), limits);
  EXPECT_TRUE(fs::exists(parent_ / "oarbank-job"));
  EXPECT_EQ(read(parent_ / "cgroup.subtree_control"), "");
}

TEST_F(CgroupLeafTest, ARequiredLimitFileMissingRefusesAndTakesTheLeafAway) {
  std::ofstream(parent_ / "cgroup.subtree_control") << "cpu memory pids\n";
  g_missing_files = {"cpu.max"};
  try {
    CgroupLeaf::create(place_, leaf_name_for("job"), all_limits());
    FAIL() << "a missing cpu.max was not refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unenforceable);
    EXPECT_NE(std::string(e.what()).find("cpu.max is missing"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(parent_ / "oarbank-job"));
  // The optional ones (memory.swap.max, memory.oom.group) may be missing.
  g_missing_files = {"memory.swap.max", "memory.oom.group"};
  auto leaf = CgroupLeaf::create(place_, leaf_name_for("job"), all_limits());
  EXPECT_EQ(read(parent_ / "oarbank-job" / "memory.max"), "1073741824");
}

TEST_F(CgroupLeafTest, ALeafThatExistsIsNotTakenOver) {
  fs::create_directory(parent_ / "oarbank-job");
  std::ofstream(parent_ / "oarbank-job" / "marker") << "someone else's";
  try {
    CgroupLeaf::create(place_, leaf_name_for("job"), LeafLimits{});
    FAIL() << "an existing leaf was taken over";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Busy);
  }
  EXPECT_EQ(read(parent_ / "oarbank-job" / "marker"), "someone else's");
}

TEST_F(CgroupLeafTest, RemoveKillsThenRemovesAndAGoneLeafIsNoError) {
  const fs::path leaf = parent_ / "oarbank-job";
  ASSERT_EQ(fake_mkdir(leaf.c_str(), 0755), 0);
  EXPECT_TRUE(remove_cgroup(leaf.string()));
  EXPECT_FALSE(fs::exists(leaf));
  EXPECT_TRUE(remove_cgroup(leaf.string()));
  EXPECT_TRUE(kill_cgroup(leaf.string()));
  // A child cgroup keeps it (EBUSY until the deadline).
  ASSERT_EQ(fake_mkdir(leaf.c_str(), 0755), 0);
  fs::create_directory(leaf / "child");
  EXPECT_FALSE(remove_cgroup(leaf.string(), 50));
  EXPECT_TRUE(fs::exists(leaf));
  // cgroup.kill was written.
  EXPECT_EQ(read(leaf / "cgroup.kill"), "1");
}

// sandbox-run's teardown (issue 11, launch cost): a leaf its module left empty is removed by
// one rmdir, without a cgroup.kill that would kill nothing.
TEST_F(CgroupLeafTest, AnEmptyLeafIsRemovedAtOnceWithoutCgroupKill) {
  const fs::path leaf = parent_ / "oarbank-job";
  ASSERT_EQ(fake_mkdir(leaf.c_str(), 0755), 0);
  static std::string kill_at_removal;
  static int removals = 0;
  kill_at_removal = "unread";
  removals = 0;
  cgroup_dir_ops.remove = [](const char* path) {
    ++removals;
    kill_at_removal = read(fs::path(path) / "cgroup.kill");
    return fake_rmdir(path);
  };
  EXPECT_TRUE(remove_cgroup(leaf.string()));
  EXPECT_FALSE(fs::exists(leaf));
  EXPECT_EQ(kill_at_removal, "");  // nothing written to cgroup.kill before the rmdir
  EXPECT_EQ(removals, 1);
}

// The usual places (statfs, no cgroup.events) give the mount the first cgroup2 line of
// mountinfo names, on this node; where there is none both say so.
TEST(CgroupMount, TheUsualPlacesAgreeWithMountinfo) {
  EXPECT_EQ(cgroup2_mount_point(), find_cgroup2_mount(read_text_file("/proc/self/mountinfo")));
}

TEST_F(CgroupLeafTest, FlatKeyedFilesAndProcsAreRead) {
  const fs::path leaf = parent_ / "oarbank-job";
  ASSERT_EQ(fake_mkdir(leaf.c_str(), 0755), 0);
  std::ofstream(leaf / "memory.events") << "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n";
  std::ofstream(leaf / "pids.max") << "64\n";
  std::ofstream(leaf / "cgroup.procs") << "12\n345\n";
  EXPECT_EQ(read_cgroup_key((leaf / "memory.events").string(), "oom_kill"), 1U);
  EXPECT_EQ(read_cgroup_key((leaf / "memory.events").string(), "max"), 3U);
  EXPECT_EQ(read_cgroup_key((leaf / "memory.events").string(), "absent"), std::nullopt);
  EXPECT_EQ(read_cgroup_number((leaf / "pids.max").string()), 64U);
  EXPECT_EQ(read_cgroup_pids(leaf.string()), (std::vector<int>{12, 345}));
  EXPECT_EQ(read_cgroup_key((leaf / "cgroup.events").string(), "populated"), 0U);
}

// Where leaves go and the limits they get (pure). Moved here from supervise_test.cpp (issue
// 11), assertions unchanged.
TEST(LeafParent, OwnCgroupLessTheSupervisorLeafElseTheConfiguredOne) {
  NodeConfig own;
  const std::string unit = "/system.slice/system-oarbank\\x2dagent.slice/oarbank-agent@job.service";
  EXPECT_EQ(leaf_parent_cgroup(own, unit), unit);
  // After sandbox-run moved itself into its supervisor leaf, the leaves are that leaf's siblings.
  EXPECT_EQ(leaf_parent_cgroup(own, unit + "/oarbank-supervisor"), unit);
  EXPECT_EQ(leaf_parent_cgroup(own, "/"), "");
  EXPECT_EQ(leaf_parent_cgroup(own, "/oarbank-supervisor"), "");
  NodeConfig configured;
  configured.cgroup_parent = "/oarbank.slice";
  EXPECT_EQ(leaf_parent_cgroup(configured, unit + "/oarbank-supervisor"), "/oarbank.slice");
}

Policy reserved(std::optional<double> cpu, std::optional<std::uint64_t> memory) {
  Policy p;
  p.bundle = "/srv/m";
  p.reservations.cpu = cpu;
  p.reservations.memory_bytes = memory;
  return p;
}

TEST(LeafLimits, ReservationsBecomeLimitsOnlyUnderHardLimits) {
  NodeConfig soft;
  auto limits = make_leaf_limits(reserved(1.5, 512ULL << 20), soft);
  EXPECT_EQ(limits.cpu_max, std::nullopt);
  EXPECT_EQ(limits.memory_max, std::nullopt);
  EXPECT_EQ(limits.pids_max, 1024U);
  EXPECT_FALSE(limits.required);
  EXPECT_EQ(limits.controllers, std::vector<std::string>{"pids"});

  NodeConfig hard;
  hard.hard_limits = true;
  limits = make_leaf_limits(reserved(1.5, 512ULL << 20), hard);
  EXPECT_EQ(limits.cpu_max, "150000 100000");
  EXPECT_EQ(limits.memory_max, 512ULL << 20);
  EXPECT_TRUE(limits.required);
  EXPECT_EQ(limits.controllers, (std::vector<std::string>{"cpu", "memory", "pids"}));
}

TEST(LeafLimits, CpuQuotaHasTheKernelsFloor) {
  NodeConfig hard;
  hard.hard_limits = true;
  hard.pids_max = std::nullopt;
  auto limits = make_leaf_limits(reserved(0.001, std::nullopt), hard);
  EXPECT_EQ(limits.cpu_max, "1000 100000");  // cpu.max refuses a quota under 1 ms
  EXPECT_EQ(limits.controllers, std::vector<std::string>{"cpu"});
  EXPECT_EQ(make_leaf_limits(reserved(0.25, std::nullopt), hard).cpu_max, "25000 100000");
  EXPECT_EQ(make_leaf_limits(reserved(std::nullopt, std::nullopt), hard).controllers,
            std::vector<std::string>{});
}

}  // namespace
}  // namespace oarbank
