// Issue 10's directory rule (probe/writable_path_rule.hpp), case by case. The opener that
// follows no symbolic link (sys/safe_open.hpp) has its own tests: safe_open_test.cpp.
#include "probe/writable_path_rule.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

namespace oarbank {
namespace {

constexpr uid_t kModule = 65534;
const std::string kWork = "/srv/jobs/work";

std::optional<std::string> judge(uid_t uid, mode_t mode, bool is_writable_path,
                                 const std::string& component = kWork) {
  return writable_path_problem(component, PathOwnership{uid, mode}, is_writable_path, kWork,
                               kModule);
}

TEST(WritablePathRule, TheWritableDirectoryItself) {
  EXPECT_EQ(judge(kModule, S_IFDIR | 0700, true), std::nullopt);
  EXPECT_EQ(judge(kModule, S_IFDIR | 0755, true), std::nullopt);  // a data directory of its own
  EXPECT_EQ(judge(0, S_IFDIR | 0755, true), std::nullopt);  // root's: the access check decides
  EXPECT_EQ(judge(kModule, S_IFREG | 0644, true), std::nullopt);  // a data file
  const std::vector<std::tuple<uid_t, mode_t, std::string>> refused = {
      {4242, S_IFDIR | 0777,
       "/srv/jobs/work is owned by uid 4242 (mode 0777); a writable "
       "directory must belong to root or the module user (65534) and not "
       "be writable by group or others"},
      {4242, S_IFDIR | 0700, "is owned by uid 4242 (mode 0700)"},
      {kModule, S_IFDIR | 0777,
       "/srv/jobs/work is writable by group or others (owner uid 65534, "
       "mode 0777)"},
      {kModule, S_IFDIR | 0770, "is writable by group or others"},
      {0, S_IFDIR | 01777, "is writable by group or others (owner uid 0, mode 1777)"},  // /tmp
      {kModule, S_IFIFO | 0600, "neither a directory nor a regular file"},
  };
  for (const auto& [uid, mode, text] : refused) {
    auto problem = judge(uid, mode, true);
    ASSERT_TRUE(problem.has_value()) << text;
    EXPECT_NE(problem->find(text), std::string::npos) << *problem;
  }
}

// A writable file with a second name (a hard link another user made, where
// fs.protected_hardlinks is off) is refused, whoever owns it; a directory's link count is its
// subdirectories, not names.
TEST(WritablePathRule, AWritableFileWithTwoNamesIsRefused) {
  auto judge_links = [](uid_t uid, mode_t mode, nlink_t links) {
    return writable_path_problem(kWork, PathOwnership{uid, mode, links}, true, kWork, kModule);
  };
  EXPECT_EQ(judge_links(kModule, S_IFREG | 0644, 1), std::nullopt);
  EXPECT_EQ(judge_links(kModule, S_IFDIR | 0700, 5), std::nullopt);
  for (uid_t uid : {kModule, uid_t{0}}) {
    auto problem = judge_links(uid, S_IFREG | 0644, 2);
    ASSERT_TRUE(problem.has_value());
    EXPECT_NE(problem->find("/srv/jobs/work has 2 names (hard links; owner uid"), std::string::npos)
        << *problem;
    EXPECT_NE(problem->find("a writable file must have one name"), std::string::npos) << *problem;
  }
}

// Issue 16: data needs read and search only; work and temp read, write and search. The line
// names the user, the access, the owner and mode, the errno, and the fix.
TEST(WritableAccess, WhatEachRoleNeeds) {
  EXPECT_EQ(writable_access_mode("data", true), R_OK | X_OK);
  EXPECT_EQ(writable_access_mode("data", false), R_OK);
  EXPECT_EQ(writable_access_mode("work", true), R_OK | W_OK | X_OK);
  EXPECT_EQ(writable_access_mode("temp", true), R_OK | W_OK | X_OK);
  EXPECT_EQ(writable_access_mode("data", true) & W_OK, 0);
}

TEST(WritableAccess, TheLineNamesUserAccessOwnerModeAndFix) {
  auto line = [](const std::string& role, const std::string& path, uid_t uid, mode_t mode,
                 int err = EACCES) {
    return writable_access_problem(role, path, PathOwnership{uid, mode}, kModule, err);
  };
  EXPECT_EQ(line("data", "/srv/x/input", 0, S_IFDIR | 0700),
            "the module user (uid 65534) needs read and search access to the data directory "
            "/srv/x/input, owned by uid 0 with mode 0700 (EACCES); to fix: if it is meant for "
            "this module alone, chown 65534 /srv/x/input; if every user may read it, chmod "
            "o+rx /srv/x/input");
  EXPECT_EQ(line("work", "/srv/x/work", 0, S_IFDIR | 0755),
            "the module user (uid 65534) needs read, write and search access to the work "
            "directory /srv/x/work, owned by uid 0 with mode 0755 (EACCES); to fix: name a work "
            "directory of the module's own (one that does not exist yet, below the node's "
            "writable_roots, is made for its user), or, if this one is meant for this module "
            "alone, chown 65534 /srv/x/work");
  EXPECT_EQ(line("temp", "/srv/x/tmp", 0, S_IFDIR | 0500),
            "the module user (uid 65534) needs read, write and search access to the temp "
            "directory /srv/x/tmp, owned by uid 0 with mode 0500 (EACCES); to fix: name a temp "
            "directory of the module's own (one that does not exist yet, below the node's "
            "writable_roots, is made for its user), or, if this one is meant for this module "
            "alone, chown 65534 /srv/x/tmp and chmod u+rwx /srv/x/tmp");
  EXPECT_EQ(line("work", "/srv/x/work", kModule, S_IFDIR | 0500),
            "the module user (uid 65534) needs read, write and search access to the work "
            "directory /srv/x/work, owned by uid 65534 with mode 0500 (EACCES); to fix: chmod "
            "u+rwx /srv/x/work");
  EXPECT_EQ(line("data", "/srv/x/in.csv", 0, S_IFREG | 0600),
            "the module user (uid 65534) needs read access to the data file /srv/x/in.csv, "
            "owned by uid 0 with mode 0600 (EACCES); to fix: if it is meant for this module "
            "alone, chown 65534 /srv/x/in.csv; if every user may read it, chmod o+r "
            "/srv/x/in.csv");
  // Session 21's attack review: the path is the policy's, and the fix is pasted into a root
  // shell: one word, whatever it holds.
  EXPECT_EQ(line("work", "/srv/x/w;id;touch${IFS}P", kModule, S_IFDIR | 0),
            "the module user (uid 65534) needs read, write and search access to the work "
            "directory /srv/x/w;id;touch${IFS}P, owned by uid 65534 with mode 0000 (EACCES); to "
            "fix: chmod u+rwx '/srv/x/w;id;touch${IFS}P'");
  EXPECT_NE(line("data", "/srv/it's", 0, S_IFDIR | 0700).find("chmod o+rx '/srv/it'\\''s'"),
            std::string::npos);
  // Not a matter of permissions: no fix is guessed.
  EXPECT_EQ(line("work", "/srv/x/work", kModule, S_IFDIR | 0700, EROFS),
            "the module user (uid 65534) needs read, write and search access to the work "
            "directory /srv/x/work, owned by uid 65534 with mode 0700 (EROFS)");
}

TEST(WritablePathRule, TheDirectoriesAbove) {
  EXPECT_EQ(judge(0, S_IFDIR | 0755, false, "/"), std::nullopt);
  EXPECT_EQ(judge(0, S_IFDIR | 01777, false, "/srv"), std::nullopt);  // sticky, as /tmp
  EXPECT_EQ(judge(kModule, S_IFDIR | 0700, false, "/srv/jobs"), std::nullopt);
  const std::vector<std::tuple<uid_t, mode_t, std::string>> refused = {
      {4242, S_IFDIR | 0755,
       "/srv/jobs (above the writable directory /srv/jobs/work) is owned "
       "by uid 4242 (mode 0755); every directory above a writable one"},
      {4242, S_IFDIR | 01777, "is owned by uid 4242 (mode 1777)"},  // sticky, but theirs
      {0, S_IFDIR | 0775,
       "is writable by group or others and not sticky (owner uid 0, mode "
       "0775)"},
      {kModule, S_IFDIR | 0777, "and not sticky"},
      {0, S_IFREG | 0755,
       "/srv/jobs (above the writable directory /srv/jobs/work) is not a "
       "directory"},
  };
  for (const auto& [uid, mode, text] : refused) {
    auto problem = judge(uid, mode, false, "/srv/jobs");
    ASSERT_TRUE(problem.has_value()) << text;
    EXPECT_NE(problem->find(text), std::string::npos) << *problem;
  }
  EXPECT_EQ(writable_path_symlink_problem("/srv/jobs", kWork),
            "/srv/jobs (above the writable directory /srv/jobs/work) is a symbolic link; "
            "writable directories are opened without following links");
}

}  // namespace
}  // namespace oarbank
