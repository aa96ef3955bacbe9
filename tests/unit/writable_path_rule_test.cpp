// Issue 10's directory rule (probe/writable_path_rule.hpp), case by case, and the opener that
// follows no symbolic link (sys/safe_open.hpp), including its fallback for kernels or
// container filters without openat2.
#include "probe/writable_path_rule.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "sys/safe_open.hpp"

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
            "/srv/x/input, owned by uid 0 with mode 0700 (EACCES); to fix: chown 65534 "
            "/srv/x/input, or chmod o+rx /srv/x/input");
  EXPECT_EQ(line("work", "/srv/x/work", 0, S_IFDIR | 0755),
            "the module user (uid 65534) needs read, write and search access to the work "
            "directory /srv/x/work, owned by uid 0 with mode 0755 (EACCES); to fix: chown 65534 "
            "/srv/x/work");
  EXPECT_EQ(line("temp", "/srv/x/tmp", 0, S_IFDIR | 0500),
            "the module user (uid 65534) needs read, write and search access to the temp "
            "directory /srv/x/tmp, owned by uid 0 with mode 0500 (EACCES); to fix: chown 65534 "
            "/srv/x/tmp and chmod u+rwx /srv/x/tmp");
  EXPECT_EQ(line("work", "/srv/x/work", kModule, S_IFDIR | 0500),
            "the module user (uid 65534) needs read, write and search access to the work "
            "directory /srv/x/work, owned by uid 65534 with mode 0500 (EACCES); to fix: chmod "
            "u+rwx /srv/x/work");
  EXPECT_EQ(line("data", "/srv/x/in.csv", 0, S_IFREG | 0600),
            "the module user (uid 65534) needs read access to the data file /srv/x/in.csv, "
            "owned by uid 0 with mode 0600 (EACCES); to fix: chown 65534 /srv/x/in.csv, or "
            "chmod o+r /srv/x/in.csv");
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

// A scratch directory: d/dir/file, d/dir-link -> dir, d/file-link -> dir/file, d/fifo.
class SafeOpen : public ::testing::Test {
 protected:
  SafeOpen() {
    char templ[] = "/tmp/oarbank-unit-safe-open-XXXXXX";
    root = ::mkdtemp(templ);
    ::mkdir((root + "/dir").c_str(), 0755);
    ::close(::open((root + "/dir/file").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    ::symlink("dir", (root + "/dir-link").c_str());
    ::symlink("dir/file", (root + "/file-link").c_str());
    ::mkfifo((root + "/fifo").c_str(), 0644);
  }
  ~SafeOpen() override {
    std::string command = "rm -rf '" + root + "'";
    [[maybe_unused]] int rc = std::system(command.c_str());
  }
  std::string root;
};

TEST_F(SafeOpen, NoComponentIsFollowedByEitherRoute) {
  for (auto* open_fn : {&open_no_symlinks, &open_no_symlinks_by_walk}) {
    for (int flags : {O_PATH, O_RDONLY}) {
      UniqueFd ok(open_fn(AT_FDCWD, root + "/dir/file", flags, 0));
      EXPECT_TRUE(ok.valid()) << flags;
      for (const char* linked : {"/dir-link/file", "/file-link", "/dir-link"}) {
        errno = 0;
        UniqueFd refused(open_fn(AT_FDCWD, root + linked, flags, 0));
        EXPECT_FALSE(refused.valid()) << linked;
        EXPECT_EQ(errno, ELOOP) << linked;
      }
    }
    // Relative to a directory descriptor, too.
    UniqueFd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    UniqueFd ok(open_fn(dir.get(), "dir/file", O_RDONLY, 0));
    EXPECT_TRUE(ok.valid());
    errno = 0;
    UniqueFd refused(open_fn(dir.get(), "dir-link/file", O_RDONLY, 0));
    EXPECT_EQ(errno, ELOOP);
    // Nothing is created through a link.
    UniqueFd created(open_fn(AT_FDCWD, root + "/dir-link/new", O_WRONLY | O_CREAT, 0600));
    EXPECT_FALSE(created.valid());
  }
  EXPECT_NE(::access((root + "/dir/new").c_str(), F_OK), 0);
  EXPECT_EQ(first_symlink_component(root + "/dir-link/x"), root + "/dir-link");
  EXPECT_EQ(first_symlink_component(root + "/dir/file"), "");
}

TEST_F(SafeOpen, OperatorFilesAreRegularFilesOnly) {
  OperatorFile file = open_operator_file(root + "/result.json", false, 0600);
  ASSERT_TRUE(file.fd.valid()) << file.problem;
  EXPECT_EQ(::write(file.fd.get(), "{}", 2), 2);
  EXPECT_EQ(::fcntl(file.fd.get(), F_GETFL) & O_NONBLOCK, 0);  // cleared after the check
  // Truncated when opened again, appended to in append mode.
  EXPECT_TRUE(open_operator_file(root + "/result.json", true, 0600).fd.valid());
  struct stat st {};
  ASSERT_EQ(::stat((root + "/result.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 2);
  EXPECT_TRUE(open_operator_file(root + "/result.json", false, 0600).fd.valid());
  ASSERT_EQ(::stat((root + "/result.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0);
  const std::vector<std::pair<std::string, std::string>> refused = {
      {root + "/file-link", root + "/file-link is a symbolic link"},
      {root + "/dir-link/x", root + "/dir-link (in " + root + "/dir-link/x) is a symbolic link"},
      {root + "/fifo", root + "/fifo is not a regular file"},  // no reader: ENXIO, at once
      {root + "/dir", "EISDIR"},
      {"/dev/null", "/dev/null is a character device, not a regular file"},
  };
  for (const auto& [path, text] : refused) {
    OperatorFile bad = open_operator_file(path, true, 0600);
    EXPECT_FALSE(bad.fd.valid()) << path;
    EXPECT_NE(bad.problem.find(text), std::string::npos) << bad.problem;
  }
  // A FIFO with a reader opens, and is refused by its type.
  UniqueFd reader(::open((root + "/fifo").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  OperatorFile fifo = open_operator_file(root + "/fifo", false, 0600);
  EXPECT_FALSE(fifo.fd.valid());
  EXPECT_NE(fifo.problem.find("is a FIFO, not a regular file"), std::string::npos) << fifo.problem;
}

TEST_F(SafeOpen, OperatorFilesAreTheCallersWithOneLink) {
  // A second name of another file: refused, and that file is not truncated.
  const std::string victim = root + "/dir/file";
  {
    UniqueFd fd(::open(victim.c_str(), O_WRONLY | O_CLOEXEC));
    ASSERT_EQ(::write(fd.get(), "keep", 4), 4);
  }
  ASSERT_EQ(::link(victim.c_str(), (root + "/hard-link").c_str()), 0);
  for (bool append : {false, true}) {
    OperatorFile linked = open_operator_file(root + "/hard-link", append, 0600);
    EXPECT_FALSE(linked.fd.valid());
    EXPECT_NE(linked.problem.find(root + "/hard-link has 2 hard links"), std::string::npos)
        << linked.problem;
  }
  struct stat st {};
  ASSERT_EQ(::stat(victim.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 4);
  // Another user's file (made first where they can write): refused, untouched.
  if (::geteuid() != 0) GTEST_SKIP() << "chown needs root";
  const std::string theirs = root + "/theirs.json";
  {
    UniqueFd fd(::open(theirs.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666));
    ASSERT_EQ(::write(fd.get(), "theirs", 6), 6);
  }
  ASSERT_EQ(::chown(theirs.c_str(), 4242, 4242), 0);
  ASSERT_EQ(::chmod(theirs.c_str(), 0666), 0);
  for (bool append : {false, true}) {
    OperatorFile planted = open_operator_file(theirs, append, 0600);
    EXPECT_FALSE(planted.fd.valid());
    EXPECT_NE(planted.problem.find(theirs + " belongs to uid 4242 (mode 0666)"), std::string::npos)
        << planted.problem;
  }
  ASSERT_EQ(::stat(theirs.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 6);
  // Root's own file is written as before.
  ASSERT_EQ(::chown(theirs.c_str(), 0, 0), 0);
  EXPECT_TRUE(open_operator_file(theirs, false, 0600).fd.valid());
}

}  // namespace
}  // namespace oarbank
