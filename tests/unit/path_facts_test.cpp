// probe/path_facts: kind() and canonical() on a prepared directory tree. Issue 11: a plain path
// reached through no symbolic link is its own canonical form without asking /proc; a path
// through a link is still resolved to where it leads.
#include "probe/path_facts.hpp"

#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace oarbank {
namespace {

TEST(PlainAbsolutePath, OnlyAbsolutePathsWithNamedComponents) {
  EXPECT_TRUE(is_plain_absolute_path("/"));
  EXPECT_TRUE(is_plain_absolute_path("/usr"));
  EXPECT_TRUE(is_plain_absolute_path("/usr/lib/x86_64-linux-gnu"));
  EXPECT_TRUE(is_plain_absolute_path("/a/.hidden/..b"));
  EXPECT_FALSE(is_plain_absolute_path(""));
  EXPECT_FALSE(is_plain_absolute_path("usr/lib"));
  EXPECT_FALSE(is_plain_absolute_path("/usr/"));
  EXPECT_FALSE(is_plain_absolute_path("//usr"));
  EXPECT_FALSE(is_plain_absolute_path("/usr//lib"));
  EXPECT_FALSE(is_plain_absolute_path("/usr/./lib"));
  EXPECT_FALSE(is_plain_absolute_path("/usr/../etc"));
  EXPECT_FALSE(is_plain_absolute_path("/usr/.."));
  EXPECT_FALSE(is_plain_absolute_path("/."));
}

class PathFactsTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/oarbank-path-facts.XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    char real[PATH_MAX];
    ASSERT_NE(::realpath(templ, real), nullptr);  // the tree's own path through no link
    root_ = real;
    std::filesystem::create_directory(root_ + "/real");
    std::ofstream(root_ + "/real/file") << "x";
    std::filesystem::create_directory_symlink("real", root_ + "/link");
    std::filesystem::create_directory_symlink(root_ + "/real", root_ + "/absolute");
    std::filesystem::create_directory_symlink("link", root_ + "/chain");
    std::filesystem::create_directory_symlink("../" + root_.substr(root_.rfind('/') + 1) + "/real",
                                              root_ + "/dotted");
    std::filesystem::create_directory_symlink("missing", root_ + "/dangling");
    std::filesystem::create_symlink("real/file", root_ + "/filelink");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::string root_;
};

TEST_F(PathFactsTree, APlainPathThroughNoLinkIsItsOwnCanonicalForm) {
  OpenedPaths paths;
  EXPECT_EQ(paths.kind(root_ + "/real"), PathKind::Directory);
  EXPECT_EQ(paths.canonical(root_ + "/real"), root_ + "/real");
  EXPECT_EQ(paths.kind(root_ + "/real/file"), PathKind::File);
  EXPECT_EQ(paths.canonical(root_ + "/real/file"), root_ + "/real/file");
  EXPECT_GE(paths.fd(root_ + "/real/file"), 0);
}

TEST_F(PathFactsTree, APathThroughALinkIsResolvedToWhereItLeads) {
  OpenedPaths paths;
  EXPECT_EQ(paths.kind(root_ + "/link"), PathKind::Directory);
  EXPECT_EQ(paths.canonical(root_ + "/link"), root_ + "/real");
  EXPECT_EQ(paths.kind(root_ + "/link/file"), PathKind::File);
  EXPECT_EQ(paths.canonical(root_ + "/link/file"), root_ + "/real/file");
}

// Issue 11: a link as the last component is resolved from its own text where the result opens
// through no link onto the same inode (no /proc); a link to a link, a target with "..", a
// link in a directory above: through /proc as before. Every way gives where it leads.
TEST_F(PathFactsTree, EveryKindOfLinkIsResolvedToWhereItLeads) {
  OpenedPaths paths;
  for (const char* name : {"/link", "/absolute", "/chain", "/dotted"}) {
    EXPECT_EQ(paths.kind(root_ + name), PathKind::Directory) << name;
    EXPECT_EQ(paths.canonical(root_ + name), root_ + "/real") << name;
    EXPECT_GE(paths.fd(root_ + name), 0) << name;
  }
  EXPECT_EQ(paths.kind(root_ + "/chain/file"), PathKind::File);
  EXPECT_EQ(paths.canonical(root_ + "/chain/file"), root_ + "/real/file");
  EXPECT_EQ(paths.kind(root_ + "/dangling"), PathKind::Missing);
}

// A policy path that reaches /proc's magic links through a link of its own (`d -> /proc/self`,
// then `d/cwd`, `d/root`) opens nothing: the rule would land on another process's directory,
// or on /, without the path naming either. (A faster way for links tried in session 10 took
// them through `stat`, which follows magic links; an attack review found it.)
TEST_F(PathFactsTree, AMagicLinkBehindALinkOpensNothing) {
  std::filesystem::create_directory_symlink("/proc/self", root_ + "/self");
  OpenedPaths paths;
  for (const char* name : {"/self/cwd", "/self/root", "/self/exe"}) {
    EXPECT_EQ(paths.kind(root_ + name), PathKind::Missing) << name;
    EXPECT_LT(paths.fd(root_ + name), 0) << name;
  }
}

// The descriptor a link's rule is made on is the inode the link leads to, a directory or a
// file, whichever way it was opened.
TEST_F(PathFactsTree, ALinksDescriptorIsTheInodeItLeadsTo) {
  OpenedPaths paths;
  struct stat real_dir {
  }, real_file{};
  ASSERT_EQ(::stat((root_ + "/real").c_str(), &real_dir), 0);
  ASSERT_EQ(::stat((root_ + "/real/file").c_str(), &real_file), 0);
  for (const char* name : {"/link", "/absolute", "/chain", "/dotted", "/filelink"}) {
    const bool file = std::string(name) == "/filelink";
    EXPECT_EQ(paths.kind(root_ + name), file ? PathKind::File : PathKind::Directory) << name;
    EXPECT_EQ(paths.canonical(root_ + name), root_ + (file ? "/real/file" : "/real")) << name;
    struct stat opened {};
    ASSERT_EQ(::fstat(paths.fd(root_ + name), &opened), 0) << name;
    const struct stat& want = file ? real_file : real_dir;
    EXPECT_EQ(opened.st_dev, want.st_dev) << name;
    EXPECT_EQ(opened.st_ino, want.st_ino) << name;
  }
}

// The base system's links, where they are links (Debian 12: /lib -> usr/lib): the rule's
// canonical form is what /proc says of the descriptor.
TEST(PathFactsSystem, TheBaseSystemLinksResolveAsProcSays) {
  OpenedPaths paths;
  for (const char* path : {"/lib", "/lib32", "/lib64", "/bin", "/sbin", "/usr/bin"}) {
    if (paths.kind(path) == PathKind::Missing) continue;
    char real[PATH_MAX];
    ASSERT_NE(::realpath(path, real), nullptr) << path;
    EXPECT_EQ(paths.canonical(path), std::string(real)) << path;
  }
}

// Issue 11: the base system's directories opened ahead (open_system_directories, fewer calls)
// answer what kind() answers of each: a directory, a link to one (its target, the same inode),
// a link to a link or to a file or through a dangling one, a missing path, a file; and the
// base system's own list on this machine.
TEST_F(PathFactsTree, TheSystemDirectoriesOpenedAheadAnswerAsKindDoes) {
  std::vector<std::string> names;
  for (const char* name : {"/real", "/link", "/absolute", "/chain", "/dotted", "/dangling",
                           "/filelink", "/real/file", "/missing", "/link/file"}) {
    names.push_back(root_ + name);
  }
  for (const char* path : {"/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc", "/opt",
                           "/proc", "/sys/devices/system/cpu"}) {
    names.emplace_back(path);
  }
  OpenedPaths ahead, plain;
  ahead.open_system_directories(names);
  for (const auto& name : names) {
    EXPECT_EQ(ahead.kind(name), plain.kind(name)) << name;
    EXPECT_EQ(ahead.canonical(name), plain.canonical(name)) << name;
    if (plain.kind(name) == PathKind::Missing) {
      EXPECT_LT(ahead.fd(name), 0) << name;
      continue;
    }
    struct stat a {
    }, b{};
    ASSERT_EQ(::fstat(ahead.fd(name), &a), 0) << name;
    ASSERT_EQ(::fstat(plain.fd(name), &b), 0) << name;
    EXPECT_EQ(a.st_dev, b.st_dev) << name;
    EXPECT_EQ(a.st_ino, b.st_ino) << name;
  }
}

TEST_F(PathFactsTree, APathThatIsNotPlainIsResolved) {
  OpenedPaths paths;
  const std::string dotted = root_ + "/real/../real/./file";
  EXPECT_EQ(paths.kind(dotted), PathKind::File);
  EXPECT_EQ(paths.canonical(dotted), root_ + "/real/file");
}

TEST_F(PathFactsTree, AMissingPathIsMissing) {
  OpenedPaths paths;
  EXPECT_EQ(paths.kind(root_ + "/none"), PathKind::Missing);
  EXPECT_EQ(paths.kind(root_ + "/link/none"), PathKind::Missing);
  EXPECT_EQ(paths.fd(root_ + "/none"), -1);
}

TEST_F(PathFactsTree, AWritablePathIsItsOwnCanonicalForm) {
  OpenedPaths paths;
  // As its owner (this test's user) would run it: the directory rule accepts a 0700 directory
  // of the module user's own.
  std::filesystem::permissions(root_ + "/real", std::filesystem::perms::owner_all);
  std::filesystem::permissions(
      root_, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                 std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                 std::filesystem::perms::others_exec);
  try {
    paths.open_writable({root_ + "/real"}, ::geteuid());
  } catch (const std::exception& e) {
    GTEST_SKIP() << "the directory rule refuses this machine's /tmp: " << e.what();
  }
  EXPECT_EQ(paths.kind(root_ + "/real"), PathKind::Directory);
  EXPECT_EQ(paths.canonical(root_ + "/real"), root_ + "/real");
}

}  // namespace
}  // namespace oarbank
