// Issue 10: the directories and files the supervisor and the launcher use. A second local user
// (uid 4242 here) must not be able to hand a module a writable directory of theirs, by
// pre-creating it, by a symbolic link at any component, or through a parent they can write;
// nor redirect, through a symbolic link or a FIFO, a file root writes for the operator
// (sandbox-run --result, --proxy-log, egress-proxy --log). Each for sandbox-exec (a bare
// launcher as root) and sandbox-run where it applies.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "sandbox_fixture.hpp"

namespace oarbank::it {
namespace {

using namespace std::chrono_literals;

constexpr uid_t kOther = 4242;  // the second local user

// A directory directly in /tmp, as another local user would make one, removed at the end.
class TmpDir {
 public:
  TmpDir() {
    static int counter = 0;
    path_ = "/tmp/oarbank-it-" + std::to_string(::getpid()) + "-dirs-" + std::to_string(counter++);
  }
  ~TmpDir() { remove_tree(path_); }
  TmpDir(const TmpDir&) = delete;
  TmpDir& operator=(const TmpDir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class Directories : public UncappedTest {
 protected:
  Directories() : state_dir(tree.path("state")) {}

  // mkdir PATH MODE, chown UID:UID (chmod again: mkdir's mode passes through the umask).
  static void make_dir(const std::string& path, mode_t mode, uid_t owner) {
    ASSERT_EQ(::mkdir(path.c_str(), mode), 0) << path;
    ASSERT_EQ(::chown(path.c_str(), owner, owner), 0) << path;
    ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
  }

  nlohmann::json with_work(const std::string& work) const {
    auto p = base_policy();
    p["work"] = work;
    return p;
  }

  // sandbox-run [options] POLICY -- payload args, with a state directory in the tree.
  RunResult run(const std::vector<std::string>& options, const nlohmann::json& policy,
                const std::vector<std::string>& args) {
    std::vector<std::string> argv{OARBANK_AGENT_BINARY, "sandbox-run", "--config",
                                  config_path,          "--id",        unique_name("dirs")};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back(tree.write_json("run-" + std::to_string(runs_++) + ".json", policy));
    argv.emplace_back("--");
    argv.push_back(tree.probe());
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions o;
    o.env = launcher_environment();
    o.env.push_back("OARBANK_STATE_DIR=" + state_dir);
    o.timeout = 20s;
    return run_command(argv, o);
  }

  // A refusal by sandbox-run: `code`, one line on stderr naming each of `mentions`.
  static void expect_run_refused(const RunResult& r, int code,
                                 const std::vector<std::string>& mentions) {
    EXPECT_TRUE(r.exited(code)) << "expected exit " << code << ", got " << r.describe();
    EXPECT_EQ(r.err_line_count(), 1U) << r.describe();
    EXPECT_TRUE(r.err.starts_with("oarbank-agent sandbox-run: ")) << r.describe();
    EXPECT_TRUE(r.out.empty()) << r.describe();
    for (const auto& mention : mentions) {
      EXPECT_NE(r.err.find(mention), std::string::npos)
          << "should mention " << mention << ": " << r.describe();
    }
  }

  // The same directory refused by both launch modes, the payload never run.
  void expect_refused_by_both(const nlohmann::json& policy, const std::string& marker,
                              const std::vector<std::string>& mentions) {
    SCOPED_TRACE(policy.dump());
    expect_launcher_failure(launch(policy, {"write", marker}), 70, mentions);
    EXPECT_FALSE(exists(marker)) << "sandbox-exec ran the module";
    expect_run_refused(run({}, policy, {"write", marker}), 70, mentions);
    EXPECT_FALSE(exists(marker)) << "sandbox-run ran the module";
  }

  static bool need_root() { return running_as_root(); }

  std::string state_dir;
  int runs_ = 0;
};

#define REQUIRE_ROOT() \
  if (!need_root()) GTEST_SKIP() << "needs root (a second local user, uid 4242)"

// --- Writable directories ------------------------------------------------------------------

TEST_F(Directories, AWorkDirectoryAnotherUserPreCreatedInTmpIsRefused) {
  REQUIRE_ROOT();
  // The case: 4242 makes the policy's work in /tmp before root runs the module, 0777.
  TmpDir theirs;
  make_dir(theirs.path(), 0777, kOther);
  expect_refused_by_both(with_work(theirs.path()), theirs.path() + "/out",
                         {"step directories failed: " + theirs.path() + " is owned by uid 4242",
                          "(mode 0777)", "root or the module user (65534)"});
  // sandbox-check says the same.
  RunResult check = run_command({OARBANK_AGENT_BINARY, "sandbox-check", "--config", config_path,
                                 tree.write_json("check.json", with_work(theirs.path()))},
                                RunOptions{.env = launcher_environment(),
                                           .stdin_fd = {},
                                           .controlling_terminal = false,
                                           .user = {},
                                           .timeout = 10s});
  EXPECT_TRUE(check.exited(70)) << check.describe();
  EXPECT_NE(check.err.find(theirs.path() + " is owned by uid 4242"), std::string::npos)
      << check.describe();
  // Theirs and private to them (0700): still not the module's.
  ASSERT_EQ(::chmod(theirs.path().c_str(), 0700), 0);
  expect_refused_by_both(with_work(theirs.path()), theirs.path() + "/out",
                         {"is owned by uid 4242 (mode 0700)"});
  // The module user's, but writable by everyone: 4242 could still read and alter its output.
  ASSERT_EQ(::chown(theirs.path().c_str(), module_uid(), module_gid()), 0);
  ASSERT_EQ(::chmod(theirs.path().c_str(), 0777), 0);
  expect_refused_by_both(with_work(theirs.path()), theirs.path() + "/out",
                         {theirs.path() + " is writable by group or others (owner uid 65534, "
                                          "mode 0777)"});
  // Group-writable alone is as bad; and temp and data are judged alike.
  ASSERT_EQ(::chmod(theirs.path().c_str(), 0770), 0);
  for (const char* key : {"temp", "data"}) {
    auto p = base_policy();
    if (std::string(key) == "data") {
      p["data"] = {tree.path("data0"), theirs.path()};
    } else {
      p[key] = theirs.path();
    }
    expect_refused_by_both(p, theirs.path() + "/out", {theirs.path() + " is writable by group"});
  }
}

TEST_F(Directories, AWritableDirectoryThatIsASymbolicLinkIsRefused) {
  REQUIRE_ROOT();
  // 4242 points work at a directory of theirs (one the module could write: 0777), or at one
  // that would pass on its own (the module user's): a link is refused either way.
  make_dir(tree.path("theirs"), 0777, kOther);
  ASSERT_EQ(::symlink(tree.path("theirs").c_str(), tree.path("link-theirs").c_str()), 0);
  ASSERT_EQ(::symlink(tree.path("work").c_str(), tree.path("link-work").c_str()), 0);
  for (const char* key : {"work", "temp", "data"}) {
    for (const char* link : {"link-theirs", "link-work"}) {
      auto p = base_policy();
      if (std::string(key) == "data") {
        p["data"] = {tree.path(link)};
      } else {
        p[key] = tree.path(link);
      }
      expect_refused_by_both(
          p, tree.path(link) + "/out",
          {tree.path(link) + " is a symbolic link", "opened without following links"});
    }
  }
  EXPECT_EQ(list_dir(tree.path("theirs")), std::vector<std::string>{});
  EXPECT_EQ(list_dir(tree.path("work")), std::vector<std::string>{});
}

TEST_F(Directories, ASymbolicLinkInAParentComponentIsRefused) {
  REQUIRE_ROOT();
  // /tree/jobs -> 4242's directory, whose work subdirectory is the module user's.
  make_dir(tree.path("their-jobs"), 0755, kOther);
  make_dir(tree.path("their-jobs/work"), 0700, module_uid());
  ASSERT_EQ(::symlink(tree.path("their-jobs").c_str(), tree.path("jobs").c_str()), 0);
  expect_refused_by_both(with_work(tree.path("jobs/work")), tree.path("jobs/work/out"),
                         {tree.path("jobs") + " (above the writable directory " +
                          tree.path("jobs/work") + ") is a symbolic link"});
  // sandbox-run would have made a missing work there: nothing is made through the link.
  expect_run_refused(run({}, with_work(tree.path("jobs/new/work")), {"true"}), 70,
                     {tree.path("jobs") + " (above the writable directory", "symbolic link"});
  EXPECT_EQ(list_dir(tree.path("their-jobs")), std::vector<std::string>{"work"});
  // Without the link, 4242's directory above is refused for its owner.
  expect_refused_by_both(with_work(tree.path("their-jobs/work")), tree.path("their-jobs/work/o"),
                         {tree.path("their-jobs") + " (above the writable directory " +
                          tree.path("their-jobs/work") + ") is owned by uid 4242"});
}

TEST_F(Directories, AParentOthersCanWriteIsRefusedUnlessSticky) {
  REQUIRE_ROOT();
  // 4242's, group-writable, not sticky: the owner and the group could rename work away and
  // put their own in its place.
  make_dir(tree.path("team"), 0775, kOther);
  make_dir(tree.path("team/work"), 0700, module_uid());
  expect_refused_by_both(with_work(tree.path("team/work")), tree.path("team/work/out"),
                         {tree.path("team") + " (above the writable directory",
                          "is owned by uid 4242 (mode 0775)", "unless sticky"});
  // Root's, but writable by group or others without the sticky bit: refused as well.
  make_dir(tree.path("open"), 0777, 0);
  make_dir(tree.path("open/work"), 0700, module_uid());
  expect_refused_by_both(
      with_work(tree.path("open/work")), tree.path("open/work/out"),
      {tree.path("open") + " (above the writable directory",
       "is writable by group or others and not sticky (owner uid 0, mode 0777)"});
  // Sticky (as /tmp): others cannot rename what is not theirs there. The module user's work
  // below it is used; 4242's is not.
  make_dir(tree.path("sticky"), 01777, 0);
  make_dir(tree.path("sticky/work"), 0700, module_uid());
  EXPECT_EQ(probe(with_work(tree.path("sticky/work")), {"write", tree.path("sticky/work/f")}),
            "ok");
  RunResult r = run({}, with_work(tree.path("sticky/work")), {"write", tree.path("sticky/work/g")});
  EXPECT_TRUE(r.exited(0)) << r.describe();
  make_dir(tree.path("sticky/their-work"), 0700, kOther);
  expect_refused_by_both(with_work(tree.path("sticky/their-work")),
                         tree.path("sticky/their-work/out"),
                         {tree.path("sticky/their-work") + " is owned by uid 4242 (mode 0700)"});
}

TEST_F(Directories, TmpIsFineAsAStickyParentButNotAsAWritableDirectory) {
  REQUIRE_ROOT();
  TmpDir mine;
  make_dir(mine.path(), 0700, module_uid());
  EXPECT_EQ(probe(with_work(mine.path()), {"write", mine.path() + "/f"}), "ok");
  RunResult r = run({}, with_work(mine.path()), {"write", mine.path() + "/g"});
  EXPECT_TRUE(r.exited(0)) << r.describe();
  EXPECT_EQ(r.out, "ok\n");
  // sandbox-run makes a missing one directly in /tmp (a writable root) for the module user.
  TmpDir made;
  r = run({}, with_work(made.path()), {"write", made.path() + "/h"});
  EXPECT_TRUE(r.exited(0)) << r.describe();
  struct stat st {};
  ASSERT_EQ(::stat(made.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, module_uid());
  EXPECT_EQ(st.st_mode & 07777, 0700U);
  // /tmp itself is everyone's: no module's work directory. A whole top-level directory is
  // an invalid policy (64) since session 11's attack review, before any directory is looked
  // at (it had been refused with 70 by the directory rule: /tmp is writable by others).
  const std::string marker = mine.path() + "/tmp-out";
  const std::string why = "/work: must not be a whole top-level directory (/tmp)";
  expect_launcher_failure(launch(with_work("/tmp"), {"write", marker}), 64, {why});
  expect_run_refused(run({}, with_work("/tmp"), {"write", marker}), 64, {why});
  EXPECT_FALSE(exists(marker));
}

TEST_F(Directories, AnUnprivilegedLaunchersModuleUserIsTheCaller) {
  REQUIRE_ROOT();
  // 4242 runs sandbox-exec itself: 65534's work directory is not theirs to be given.
  LaunchOptions o;
  o.run.user = std::make_pair(kOther, kOther);
  expect_launcher_failure(
      launch(base_policy(), {"write", tree.path("work/ran")}, o), 70,
      {tree.path("work") + " is owned by uid 65534", "root or the module user (4242)"});
  EXPECT_FALSE(exists(tree.path("work/ran")));
  // Directories of 4242's own are theirs to use.
  for (const char* dir : {"work", "temp", "data0", "data1"}) {
    ASSERT_EQ(::chown(tree.path(dir).c_str(), kOther, kOther), 0);
  }
  EXPECT_EQ(probe(base_policy(), {"write", tree.path("work/ran")}, o), "ok");
}

TEST_F(Directories, MissingDataDirectoriesAreMadeOnlyBelowTheWritableRoots) {
  REQUIRE_ROOT();
  auto p = base_policy();
  p["data"] = {tree.path("data0"), tree.path("jobs/9/data")};
  RunResult r = run({}, p, {"write", tree.path("jobs/9/data/x")});
  EXPECT_TRUE(r.exited(0)) << r.describe();
  EXPECT_EQ(r.out, "ok\n");
  struct stat st {};
  ASSERT_EQ(::stat(tree.path("jobs/9/data").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, module_uid());
  EXPECT_EQ(st.st_mode & 07777, 0700U);
  // Outside the writable roots: 70, and nothing made.
  const std::string outside = "/run/" + unique_name("dirs-data") + "/data";
  p["data"] = {outside};
  expect_run_refused(run({}, p, {"true"}), 70, {outside, "writable_roots"});
  EXPECT_FALSE(exists(outside.substr(0, outside.rfind('/'))));
  // A bare sandbox-exec makes nothing: a missing data directory is named.
  p["data"] = {tree.path("jobs/10/data")};
  expect_launcher_failure(launch(p, {"true"}), 70, {tree.path("jobs/10/data") + " does not exist"});
  EXPECT_FALSE(exists(tree.path("jobs/10")));
}

// A data file with a second name: where fs.protected_hardlinks is off, another user could link
// a file of root's or the operator's at the path; the module would write through it. Made here
// by root, as that user would on such a node: refused by both launch modes, the file unchanged.
TEST_F(Directories, AWritableFileWithASecondNameIsRefused) {
  REQUIRE_ROOT();
  const std::string original = tree.path("operators-file");
  write_file(original, "the operator's\n", 0644);
  ASSERT_EQ(::chown(original.c_str(), module_uid(), module_gid()), 0);
  const std::string data_file = tree.path("data-file");
  ASSERT_EQ(::link(original.c_str(), data_file.c_str()), 0);
  auto p = base_policy();
  p["data"] = {data_file};
  expect_refused_by_both(p, tree.path("work/never"),
                         {data_file + " has 2 names (hard links", "must have one name"});
  EXPECT_EQ(read_file(original), "the operator's\n");
}

// Issue 16: sandbox-check agrees with sandbox-run about the directories sandbox-run will
// make: "will be created", exit 0, where sandbox-run then runs; and refuses (70) with the
// same reason where sandbox-run would. The policy read from standard input ("-") too.
TEST_F(Directories, SandboxCheckSaysWhatSandboxRunWillCreate) {
  REQUIRE_ROOT();
  auto p = base_policy();
  p["work"] = tree.path("jobs/11/work");
  p["data"] = {tree.path("data0"), tree.path("jobs/11/in")};
  const std::string file = tree.write_json("will-be-created.json", p);
  RunOptions o{.env = launcher_environment(),
               .stdin_fd = {},
               .controlling_terminal = false,
               .user = {},
               .timeout = 10s};
  auto created_line = [&](const std::string& pointer, const std::string& path) {
    return "policy " + pointer + ": " + path +
           " will be created by sandbox-run (below the writable root /tmp), owned by the module "
           "user (uid " +
           std::to_string(module_uid()) + "); a bare sandbox-exec needs it made first\n";
  };
  RunResult check =
      run_command({OARBANK_AGENT_BINARY, "sandbox-check", "--config", config_path, file}, o);
  EXPECT_TRUE(check.exited(0)) << check.describe();
  EXPECT_EQ(check.out, created_line("/work", tree.path("jobs/11/work")) +
                           created_line("/data/1", tree.path("jobs/11/in")) + "this node can run " +
                           file + "\n");
  EXPECT_EQ(check.err, "");
  EXPECT_FALSE(exists(tree.path("jobs/11"))) << "sandbox-check made something";
  // From standard input, the same answer.
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  o.stdin_fd = fd;
  check = run_command({OARBANK_AGENT_BINARY, "sandbox-check", "--config", config_path, "-"}, o);
  ::close(fd);
  o.stdin_fd.reset();
  EXPECT_TRUE(check.exited(0)) << check.describe();
  EXPECT_TRUE(check.out.ends_with("this node can run (standard input)\n")) << check.describe();
  // sandbox-run runs it, making them.
  RunResult r = run({}, p, {"write", tree.path("jobs/11/work/x")});
  EXPECT_TRUE(r.exited(0)) << r.describe();
  EXPECT_TRUE(exists(tree.path("jobs/11/work/x")));
  // Outside the writable roots: both refuse.
  const std::string outside = "/run/" + unique_name("dirs-check") + "/work";
  p["work"] = outside;
  p["data"] = {tree.path("data0")};
  check = run_command({OARBANK_AGENT_BINARY, "sandbox-check", "--config", config_path,
                       tree.write_json("outside-check.json", p)},
                      o);
  EXPECT_TRUE(check.exited(70)) << check.describe();
  EXPECT_EQ(check.err,
            "oarbank-agent sandbox-check: policy /work: " + outside +
                " does not exist on this node, and sandbox-run creates missing directories only "
                "below the node's writable_roots (/var/lib/oarbank, /tmp)\n");
  expect_run_refused(run({}, p, {"true"}), 70, {outside, "writable_roots"});
}

// --- Files written for the operator ----------------------------------------------------------

TEST_F(Directories, ResultThroughASymbolicLinkIsRefusedAndNothingIsWritten) {
  REQUIRE_ROOT();
  make_dir(tree.path("theirs"), 0777, kOther);
  write_file(tree.path("theirs/existing"), "theirs\n", 0666);
  // The final component a link: to a file that does not exist yet, and to one that does.
  ASSERT_EQ(::symlink(tree.path("theirs/new").c_str(), tree.path("result-new").c_str()), 0);
  ASSERT_EQ(::symlink(tree.path("theirs/existing").c_str(), tree.path("result-old").c_str()), 0);
  // A parent component a link.
  ASSERT_EQ(::symlink(tree.path("theirs").c_str(), tree.path("results").c_str()), 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {tree.path("result-new"), tree.path("result-new") + " is a symbolic link"},
      {tree.path("result-old"), tree.path("result-old") + " is a symbolic link"},
      {tree.path("results/r.json"),
       tree.path("results") + " (in " + tree.path("results/r.json") + ") is a symbolic link"},
  };
  for (const auto& [path, mention] : cases) {
    SCOPED_TRACE(path);
    RunResult r = run({"--result", path}, base_policy(), {"write", tree.path("work/ran")});
    expect_run_refused(r, 64, {"--result " + mention});
    EXPECT_FALSE(exists(tree.path("work/ran"))) << "the module ran";
  }
  EXPECT_EQ(list_dir(tree.path("theirs")), std::vector<std::string>{"existing"});
  EXPECT_EQ(read_file(tree.path("theirs/existing")), "theirs\n");
  // A plain file is written, as before.
  RunResult r = run({"--result", tree.path("result.json")}, base_policy(), {"true"});
  EXPECT_TRUE(r.exited(0)) << r.describe();
  EXPECT_EQ(nlohmann::json::parse(read_file(tree.path("result.json")))["end"], "exited");
}

TEST_F(Directories, ResultInAFileAnotherUserMadeIsRefused) {
  REQUIRE_ROOT();
  // The second local user makes the result file first, where anyone may (mode 0666): root's
  // result would land in a file they read and rewrite afterwards (a forged "exit_code": 0).
  const std::string planted = tree.path("planted.json");
  write_file(planted, "theirs\n", 0666);
  ASSERT_EQ(::chown(planted.c_str(), kOther, kOther), 0);
  ASSERT_EQ(::chmod(planted.c_str(), 0666), 0);
  // A second name of a file that is not the result's (the link another user could make
  // where fs.protected_hardlinks is off): its content would be truncated.
  write_file(tree.path("victim"), "victim\n", 0644);
  ASSERT_EQ(::link(tree.path("victim").c_str(), tree.path("linked.json").c_str()), 0);
  // Root's own file that anyone may write (made 0666 earlier): anyone could rewrite the
  // result afterwards, or hold it open from before.
  const std::string open_to_all = tree.path("open-to-all.json");
  write_file(open_to_all, "anyone's\n", 0666);
  ASSERT_EQ(::chmod(open_to_all.c_str(), 0666), 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {planted, planted + " belongs to uid 4242 (mode 0666)"},
      {tree.path("linked.json"), tree.path("linked.json") + " has 2 hard links"},
      {open_to_all, open_to_all + " is writable by group or others (mode 0666)"},
  };
  for (const auto& [path, mention] : cases) {
    SCOPED_TRACE(path);
    RunResult r = run({"--result", path}, base_policy(), {"write", tree.path("work/ran")});
    expect_run_refused(r, 64, {"--result " + mention});
    EXPECT_FALSE(exists(tree.path("work/ran"))) << "the module ran";
  }
  EXPECT_EQ(read_file(planted), "theirs\n");
  EXPECT_EQ(read_file(tree.path("victim")), "victim\n");
  // The proxy's log, opened the same way.
  RunResult r = run({"--proxy-log", planted}, egress_policy(), {"write", tree.path("work/ran")});
  expect_run_refused(r, 64, {"--proxy-log " + planted + " belongs to uid 4242"});
  EXPECT_FALSE(exists(tree.path("work/ran"))) << "the module ran";
  EXPECT_EQ(read_file(planted), "theirs\n");
}

TEST_F(Directories, ResultAtAFifoIsRefusedAtOnce) {
  const std::string fifo = tree.path("result.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  // No reader: the open would block for ever without O_NONBLOCK (run_command's timeout
  // would kill it and report timed_out).
  RunResult r = run({"--result", fifo}, base_policy(), {"write", tree.path("work/ran")});
  expect_run_refused(r, 64, {"--result " + fifo + " is not a regular file"});
  // A reader waiting on it: opened, then refused by its type; nothing is written to it.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  r = run({"--result", fifo}, base_policy(), {"write", tree.path("work/ran")});
  expect_run_refused(r, 64, {"--result " + fifo + " is a FIFO, not a regular file"});
  char byte = 0;
  EXPECT_LE(::read(reader, &byte, 1), 0) << "something was written to the FIFO";
  ::close(reader);
  EXPECT_FALSE(exists(tree.path("work/ran"))) << "the module ran";
  // A directory is no result file either.
  r = run({"--result", tree.path("outside")}, base_policy(), {"true"});
  EXPECT_TRUE(r.exited(64)) << r.describe();
}

TEST_F(Directories, ProxyLogsThroughASymbolicLinkOrAtAFifoAreRefused) {
  make_dir(tree.path("theirs"), 0777, running_as_root() ? kOther : ::getuid());
  ASSERT_EQ(::symlink(tree.path("theirs/log").c_str(), tree.path("log-link").c_str()), 0);
  ASSERT_EQ(::symlink(tree.path("theirs").c_str(), tree.path("logs").c_str()), 0);
  const std::string fifo = tree.path("log.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {tree.path("log-link"), tree.path("log-link") + " is a symbolic link"},
      {tree.path("logs/proxy.log"), tree.path("logs") + " (in " + tree.path("logs/proxy.log")},
      {fifo, fifo + " is not a regular file"},
  };
  const std::string egress = tree.write_json("egress.json", egress_policy());
  int port = 0;
  {
    TcpListener free_port;  // a free port, given back at once
    port = free_port.port();
  }
  for (const auto& [path, mention] : cases) {
    SCOPED_TRACE(path);
    // egress-proxy --log: refused before it serves anything (else it would run until SIGTERM
    // and the run_command timeout would say so).
    RunOptions o;
    o.env = launcher_environment();
    o.timeout = 10s;
    RunResult r =
        run_command({OARBANK_AGENT_BINARY, "egress-proxy", "--config", config_path, "--listen",
                     "127.0.0.1:" + std::to_string(port), "--log", path, egress},
                    o);
    EXPECT_TRUE(r.exited(64)) << r.describe();
    EXPECT_EQ(r.err_line_count(), 1U) << r.describe();
    EXPECT_NE(r.err.find("--log " + mention), std::string::npos) << r.describe();
    // sandbox-run --proxy-log (its own proxy, as root in the module's network namespace).
    if (running_as_root()) {
      r = run({"--proxy-log", path}, egress_policy(), {"write", tree.path("work/ran")});
      expect_run_refused(r, 64, {"--proxy-log " + mention});
      EXPECT_FALSE(exists(tree.path("work/ran"))) << "the module ran";
    }
  }
  EXPECT_EQ(list_dir(tree.path("theirs")), std::vector<std::string>{});
}

}  // namespace
}  // namespace oarbank::it
