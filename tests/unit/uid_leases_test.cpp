// Issue 12, "Its own user": the lease table (plan/uid_leases.cpp) and the registry that keeps
// it (supervise/uid_registry.cpp) on a temporary directory. No root needed.
#include "plan/uid_leases.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "supervise/uid_registry.hpp"
#include "sys/error.hpp"

namespace oarbank {
namespace {

namespace fs = std::filesystem;

TEST(UidLeases, ChoosesTheLowestNumberNotTaken) {
  const std::set<std::uint32_t> taken = {100, 101};
  auto by = [&](std::uint32_t n) { return taken.count(n) != 0; };
  EXPECT_EQ(choose_module_uid(100, 110, by), 102U);
  EXPECT_EQ(choose_module_uid(100, 101, by), std::nullopt);
  // 0 and the overflow uid are never chosen, even when nothing takes them.
  EXPECT_EQ(choose_module_uid(0, 1, [](std::uint32_t) { return false; }), 1U);
  EXPECT_EQ(choose_module_uid(65534, 65535, [](std::uint32_t) { return false; }), 65535U);
}

// Attack review: a number a running process holds in any slot (real, effective, saved or
// file-system uid or gid, or a supplementary group) is in use, and is not leased.
TEST(UidLeases, ProcStatusIdsAreEveryUidGidAndGroup) {
  const std::string status =
      "Name:\tsleep\nUmask:\t0022\nPid:\t42\nPPid:\t1\nTracerPid:\t0\n"
      "Uid:\t1000\t61184\t1000\t61185\nGid:\t1001\t1001\t61186\t1001\n"
      "FDSize:\t64\nGroups:\t27 61187 \nNStgid:\t42\n";
  auto ids = proc_status_ids(status);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::uint32_t>{27, 1000, 1000, 1001, 1001, 1001, 61184, 61185, 61186,
                                             61187}));
  // Pid, PPid and the rest are not ids; an empty Groups line adds nothing.
  EXPECT_TRUE(proc_status_ids("Pid:\t61184\nPPid:\t61184\nGroups:\t\n").empty());
  EXPECT_EQ(proc_status_ids("Uid:\t4294967295\t99999999999\t1\t1\n"),
            (std::vector<std::uint32_t>{4294967295U}));
}

// Attack review: /etc/subuid and /etc/subgid delegate ranges to users (newuidmap).
TEST(UidLeases, SubordinateRangeHoldingFindsTheLineWhoseRangeHoldsTheId) {
  const std::string text =
      "alice:100000:65536\nmallory:165536:65536\n1002:300000:1\nbroken line\n:5:5\n"
      "x:notanumber:5\ny:400000:\n";
  EXPECT_EQ(subordinate_range_holding(text, 100000), "alice:100000:65536");
  EXPECT_EQ(subordinate_range_holding(text, 165535), "alice:100000:65536");
  EXPECT_EQ(subordinate_range_holding(text, 165536), "mallory:165536:65536");
  EXPECT_EQ(subordinate_range_holding(text, 300000), "1002:300000:1");
  EXPECT_EQ(subordinate_range_holding(text, 300001), std::nullopt);
  EXPECT_EQ(subordinate_range_holding(text, 99999), std::nullopt);
  EXPECT_EQ(subordinate_range_holding(text, 5), std::nullopt);       // no owner: skipped
  EXPECT_EQ(subordinate_range_holding(text, 400000), std::nullopt);  // no count: skipped
  EXPECT_EQ(subordinate_range_holding("", 1), std::nullopt);
  // A range reaching past 2^32 still holds the numbers below it.
  EXPECT_EQ(subordinate_range_holding("m:4294967290:100", 4294967295U), "m:4294967290:100");
}

TEST(UidLeases, LeaseRoundTripsAndWhatCannotBeTrustedIsRefused) {
  const UidLease lease{"a", 61184, 61184, 10, 20, {"/tmp/a", "/var/lib/oarbank/a"}};
  std::string problem;
  auto back = uid_lease_from_json(uid_lease_to_json(lease), problem);
  ASSERT_TRUE(back.has_value()) << problem;
  EXPECT_EQ(*back, lease);
  for (const char* bad : {
           "",
           "[]",
           R"({"id": "a"})",
           R"({"id": "a", "uid": 0, "gid": 5, "leased_at": 0, "last_run": 0, "paths": []})",
           R"({"id": "a", "uid": 5, "gid": 0, "leased_at": 0, "last_run": 0, "paths": []})",
           R"({"id": "a", "uid": -1, "gid": 5, "leased_at": 0, "last_run": 0, "paths": []})",
       }) {
    problem.clear();
    EXPECT_FALSE(uid_lease_from_json(bad, problem).has_value()) << bad;
    EXPECT_FALSE(problem.empty()) << bad;
  }
}

TEST(UidLeases, DueAfterTheConfiguredDaysAndPathsRememberedOnce) {
  UidLease lease{"a", 7, 7, 0, 1000, {}};
  EXPECT_FALSE(lease_is_due(lease, 1000 + 86400 - 1, 1));
  EXPECT_TRUE(lease_is_due(lease, 1000 + 86400, 1));
  EXPECT_TRUE(remember_lease_path(lease, "/b"));
  EXPECT_TRUE(remember_lease_path(lease, "/a"));
  EXPECT_FALSE(remember_lease_path(lease, "/b"));
  EXPECT_EQ(lease.paths, (std::vector<std::string>{"/a", "/b"}));
}

TEST(UidRegistry, TheUserDatabaseNamesRootAndItsGroups) {
  EXPECT_TRUE(user_database_names(0));
  // A number far beyond any real account (and below (uid_t)-1).
  EXPECT_FALSE(user_database_names(4000000001U));
}

class UidRegistryDir : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "oarbank-uids-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    base_ = pattern;
    dir_ = (base_ / "registry").string();
  }
  void TearDown() override { fs::remove_all(base_); }
  fs::path base_;
  std::string dir_;
  // Far from real accounts: nothing in the user database names these.
  ModuleUserRange range_{4000000000U, 4000000002U, 1};
};

bool never_running(const std::string&) { return false; }
bool always_running(const std::string&) { return true; }

TEST_F(UidRegistryDir, SameIdSameUidOtherIdsOthersUntilTheRangeIsFull) {
  const UidLease a = lease_module_user(dir_, "a", range_, {"/x/a"}, 1000);
  EXPECT_EQ(a.uid, 4000000000U);
  EXPECT_EQ(a.gid, a.uid);
  struct stat st {};
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700U);
  ASSERT_EQ(::stat((dir_ + "/a.lease").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600U);
  ASSERT_EQ(::stat((dir_ + "/4000000000.uid").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600U);
  EXPECT_EQ(lease_module_user(dir_, "a", range_, {}, 2000).uid, a.uid);
  EXPECT_EQ(lease_module_user(dir_, "b", range_, {}, 2000).uid, 4000000001U);
  EXPECT_EQ(lease_module_user(dir_, "c", range_, {}, 2000).uid, 4000000002U);
  try {
    lease_module_user(dir_, "d", range_, {}, 2000);
    FAIL() << "a fourth id leased from a range of three";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unenforceable);
    EXPECT_NE(std::string(e.what()).find("sandbox-ctl reclaim"), std::string::npos) << e.what();
  }
  const auto leases = list_module_users(dir_);
  ASSERT_EQ(leases.size(), 3U);
  EXPECT_EQ(leases[0].paths, (std::vector<std::string>{"/x/a"}));
  // A last run within the hour is not rewritten; later it is.
  EXPECT_EQ(leases[0].last_run, 1000);
  lease_module_user(dir_, "a", range_, {}, 1000 + 3600);
  EXPECT_EQ(list_module_users(dir_)[0].last_run, 1000 + 3600);
}

// systemd may hand a leased number to a DynamicUser= service after the lease was made: every
// run of the id looks again (a fake reservation directory here), and refuses while it is so.
TEST_F(UidRegistryDir, ALeasedUidThatSystemdNowHandsOutIsRefusedOnTheNextRun) {
  const fs::path dynamic = base_ / "dynamic-uid";
  fs::create_directory(dynamic);
  ASSERT_EQ(::setenv(kDynamicUidDirEnvVar, dynamic.c_str(), 1), 0);
  const UidLease a = lease_module_user(dir_, "a", range_, {}, 1000);
  EXPECT_EQ(leased_uid_conflict(a.uid), "");
  // systemd reserves a number with a file named by it (and a link named by the user).
  { std::ofstream(dynamic / std::to_string(a.uid)) << ""; }
  EXPECT_NE(leased_uid_conflict(a.uid).find("dynamic user"), std::string::npos);
  try {
    lease_module_user(dir_, "a", range_, {}, 2000);
    FAIL() << "a leased uid that systemd handed out ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unenforceable);
    const std::string what = e.what();
    EXPECT_NE(what.find((dynamic / std::to_string(a.uid)).string()), std::string::npos) << what;
    EXPECT_NE(what.find("module_users"), std::string::npos) << what;
  }
  // A new id is not given the reserved number; once systemd lets it go, a runs again.
  EXPECT_EQ(lease_module_user(dir_, "b", range_, {}, 2000).uid, a.uid + 1);
  fs::remove(dynamic / std::to_string(a.uid));
  EXPECT_EQ(lease_module_user(dir_, "a", range_, {}, 2000).uid, a.uid);
  ::unsetenv(kDynamicUidDirEnvVar);
}

// Attack review: a number in a user's subordinate range (/etc/subuid, /etc/subgid; a fake
// directory here) is theirs to run processes as (newuidmap, unprivileged): a new id is not
// given it, and a leased one that a range comes to hold is refused on the next run.
TEST_F(UidRegistryDir, ASubordinateIdOfAUserIsNotLeasedAndALeasedOneNowDelegatedIsRefused) {
  const fs::path subids = base_ / "subids";
  fs::create_directory(subids);
  ASSERT_EQ(::setenv(kSubordinateIdsDirEnvVar, subids.c_str(), 1), 0);
  { std::ofstream(subids / "subuid") << "mallory:4000000000:1\n"; }
  { std::ofstream(subids / "subgid") << "mallory:4000000001:1\n"; }
  const UidLease a = lease_module_user(dir_, "a", range_, {}, 1000);
  EXPECT_EQ(a.uid, 4000000002U);
  EXPECT_EQ(leased_uid_conflict(4000000000U)
                .find("delegated by " + (subids / "subuid").string() + " (mallory:4000000000:1)"),
            0U);
  { std::ofstream(subids / "subgid", std::ios::app) << "eve:4000000002:5\n"; }
  try {
    lease_module_user(dir_, "a", range_, {}, 2000);
    FAIL() << "a leased uid now delegated to a user ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unenforceable);
    const std::string what = e.what();
    EXPECT_NE(what.find((subids / "subgid").string() + " (eve:4000000002:5)"), std::string::npos)
        << what;
    EXPECT_NE(what.find("module_users"), std::string::npos) << what;
  }
  fs::remove(subids / "subgid");
  EXPECT_EQ(lease_module_user(dir_, "a", range_, {}, 2000).uid, a.uid);
  ::unsetenv(kSubordinateIdsDirEnvVar);
}

TEST_F(UidRegistryDir, ConcurrentLeasesNeverShareAUid) {
  ModuleUserRange wide{4000000000U, 4000000100U, 1};
  std::vector<std::thread> threads;
  std::vector<std::uint32_t> uids(16);
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] {
      uids[i] = lease_module_user(dir_, "id" + std::to_string(i), wide, {}, 1000).uid;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(std::set<std::uint32_t>(uids.begin(), uids.end()).size(), 16U);
}

TEST_F(UidRegistryDir, AnUntrustedOrUnreadableLeaseIsRefusedNotReset) {
  lease_module_user(dir_, "a", range_, {}, 1000);
  { std::ofstream(dir_ + "/a.lease") << "{ not json"; }
  EXPECT_THROW(lease_module_user(dir_, "a", range_, {}, 1000), Error);
  EXPECT_THROW(list_module_users(dir_), Error);
  const std::string other = base_.string() + "/other";
  lease_module_user(other, "a", range_, {}, 1000);
  ASSERT_EQ(::chmod((other + "/a.lease").c_str(), 0622), 0);
  EXPECT_THROW(list_module_users(other), Error);
  // A number reserved but untrusted is not handed out: a new id's lease fails closed.
  ASSERT_EQ(::chmod((other + "/4000000000.uid").c_str(), 0666), 0);
  EXPECT_THROW(lease_module_user(other, "b", range_, {}, 1000), Error);
}

// A crash between the number's reservation and the lease: the number stays reserved for its
// id (never given to another), and that id's next run gets it.
TEST_F(UidRegistryDir, AReservationWithoutItsLeaseIsItsIdsAlone) {
  lease_module_user(dir_, "a", range_, {}, 1000);
  ASSERT_EQ(::unlink((dir_ + "/a.lease").c_str()), 0);
  EXPECT_EQ(lease_module_user(dir_, "b", range_, {}, 1000).uid, 4000000001U);
  EXPECT_EQ(lease_module_user(dir_, "a", range_, {}, 1000).uid, 4000000000U);
}

TEST_F(UidRegistryDir, ReclaimOnlyWhenDueNotRunningAndNoFileOfTheUidIsLeft) {
  const std::string work = (base_ / "work").string();
  fs::create_directories(work + "/deep");
  const UidLease a = lease_module_user(dir_, "a", range_, {work}, 1000);
  const std::int64_t later = 1000 + 2 * 86400;
  try {
    reclaim_module_user(dir_, "a", 1, 1000 + 3600, never_running);
    FAIL() << "reclaimed a lease run an hour ago";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reclaim_after_days"), std::string::npos) << e.what();
  }
  EXPECT_THROW(reclaim_module_user(dir_, "a", 1, later, always_running), Error);
  if (::geteuid() == 0) {
    // A file the module left, still its uid's: named, with how to re-own it.
    const std::string left = work + "/deep/left";
    std::ofstream(left) << "x";
    ASSERT_EQ(::chown(left.c_str(), a.uid, 0), 0);
    try {
      reclaim_module_user(dir_, "a", 1, later, never_running);
      FAIL() << "reclaimed a uid that still owns " << left;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Unenforceable);
      EXPECT_NE(std::string(e.what()).find(left + " still belongs to uid"), std::string::npos)
          << e.what();
    }
    ASSERT_EQ(::chown(left.c_str(), 0, 0), 0);
  }
  EXPECT_EQ(reclaim_module_user(dir_, "a", 1, later, never_running).uid, a.uid);
  EXPECT_TRUE(list_module_users(dir_).empty());
  EXPECT_THROW(reclaim_module_user(dir_, "a", 1, later, never_running), Error);
  // Its number is free again.
  EXPECT_EQ(lease_module_user(dir_, "b", range_, {}, later).uid, a.uid);
}

// Session 14's attack reviews: the advice is a command an operator may paste as root, so the
// policy's path in it is one shell word, whatever its author wrote; and a lease learns a run's
// directories only when told (remember_lease_paths before the run makes any, and
// forget_lease_paths when it ends without its module having run).
TEST_F(UidRegistryDir, TheReclaimAdviceQuotesThePathAndPathsAreRememberedAndForgottenWhenTold) {
  const std::string work = (base_ / "d$(touch x)'q").string();
  fs::create_directories(work);
  const UidLease a = lease_module_user(dir_, "a", range_, {}, 1000);
  EXPECT_TRUE(list_module_users(dir_)[0].paths.empty());
  remember_lease_paths(dir_, "a", {work});
  remember_lease_paths(dir_, "nobody-leased-this", {work});  // no lease: nothing to remember
  ASSERT_EQ(list_module_users(dir_).size(), 1U);
  EXPECT_EQ(list_module_users(dir_)[0].paths, std::vector<std::string>{work});
  forget_lease_paths(dir_, "a", {work, "/never/remembered"});
  EXPECT_TRUE(list_module_users(dir_)[0].paths.empty());
  remember_lease_paths(dir_, "a", {work});
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to leave a file of the module's uid";
  const std::string left = work + "/left";
  std::ofstream(left) << "x";
  ASSERT_EQ(::chown(left.c_str(), a.uid, 0), 0);
  const std::string why = reclaim_obstacle(list_module_users(dir_)[0], 1000 + 2 * 86400, 1);
  const std::string quoted = "'" + (base_ / "d$(touch x)'\\''q").string() + "'";
  EXPECT_NE(why.find("(find " + quoted + " -xdev"), std::string::npos) << why;
  ASSERT_EQ(::chown(left.c_str(), 0, 0), 0);
}

// Attack review (session 16): a remembered path that became a symbolic link (its directory moved
// away, a link left in its place) is not "clean": the walk does not look behind it. One that
// is gone is (removing what the module left is what the advice asks for).
TEST_F(UidRegistryDir, AReclaimLooksBehindNoSymbolicLinkAndAcceptsAPathThatIsGone) {
  const std::string work = (base_ / "work").string();
  const std::string moved = (base_ / "moved").string();
  fs::create_directories(work);
  lease_module_user(dir_, "a", range_, {}, 1000);
  remember_lease_paths(dir_, "a", {work});
  fs::rename(work, moved);
  fs::create_directory_symlink(moved, work);
  const std::string why = reclaim_obstacle(list_module_users(dir_)[0], 1000 + 2 * 86400, 1);
  EXPECT_EQ(why.find(work + " is a symbolic link now"), 0U) << why;
  fs::remove(work);
  EXPECT_EQ(reclaim_obstacle(list_module_users(dir_)[0], 1000 + 2 * 86400, 1), "");
}

// Attack review (session 16): the leased number is the module's gid too, so an account whose
// primary group it is names it as much as one whose uid it is.
TEST(UidLeases, TheUserDatabaseNamesANumberAsAUidAGidOrAPrimaryGroup) {
  const std::string passwd =
      "root:x:0:0:root:/root:/bin/bash\nsvc:x:1001:4000000007::/:/bin/false\nbad line\n";
  EXPECT_TRUE(database_names(passwd, 0));
  EXPECT_TRUE(database_names(passwd, 1001));
  EXPECT_FALSE(database_names(passwd, 4000000007U));
  EXPECT_TRUE(database_names(passwd, 4000000007U, true));
  EXPECT_FALSE(database_names(passwd, 400000000U, true));
  EXPECT_FALSE(database_names("a:x:12\n", 1));
  EXPECT_TRUE(database_names("staff:x:50:alice,bob", 50));
  EXPECT_FALSE(database_names("", 0));
}

// Session 13: the module's own /etc/passwd and /etc/group, as glibc's files module reads them.
TEST(UidLeases, TheModulesOwnUserDatabaseNamesRootItsUserAndNobody) {
  const UidLease lease{"job-7", 61190, 61190, 0, 0, {}};
  EXPECT_EQ(module_user_name("job-7"), "oarbank-job-7");
  EXPECT_EQ(module_passwd_text(lease),
            "root:x:0:0:root:/root:/usr/sbin/nologin\n"
            "oarbank-job-7:x:61190:61190:oarbank module job-7:/:/usr/sbin/nologin\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
  EXPECT_EQ(module_group_text(lease), "root:x:0:\noarbank-job-7:x:61190:\nnogroup:x:65534:\n");
  // The run's home (session 18); one the format cannot carry falls back to "/".
  EXPECT_NE(module_passwd_text(lease, "/srv/job-7/work")
                .find(":oarbank module job-7:/srv/job-7/work:/usr/sbin/nologin\n"),
            std::string::npos);
  EXPECT_NE(module_passwd_text(lease, "/srv/a:b").find(":oarbank module job-7:/:/usr/sbin/"),
            std::string::npos);
  EXPECT_NE(module_passwd_text(lease, "/srv/a\nb").find(":oarbank module job-7:/:/usr/sbin/"),
            std::string::npos);
}

}  // namespace
}  // namespace oarbank
