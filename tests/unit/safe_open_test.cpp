// The opener that follows no symbolic link (sys/safe_open.hpp), including its fallback for
// kernels or container filters without openat2, and the operator's files it opens (issue 10).
// Moved here from writable_path_rule_test.cpp (issue 11), assertions unchanged.
#include "sys/safe_open.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace oarbank {
namespace {

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
  // Root's own file that others may still write (0666): refused too (attack review: anyone
  // could rewrite it afterwards); once only its owner may write it, it is written as before.
  ASSERT_EQ(::chown(theirs.c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod(theirs.c_str(), 0666), 0);
  OperatorFile open_to_all = open_operator_file(theirs, true, 0600);
  EXPECT_FALSE(open_to_all.fd.valid());
  EXPECT_NE(open_to_all.problem.find(theirs + " is writable by group or others (mode 0666)"),
            std::string::npos)
      << open_to_all.problem;
  ASSERT_EQ(::chmod(theirs.c_str(), 0644), 0);
  EXPECT_TRUE(open_operator_file(theirs, false, 0600).fd.valid());
}

}  // namespace
}  // namespace oarbank
