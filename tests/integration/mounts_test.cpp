// Issue 12, a module's own mounts: sandbox-run started as root gives each module a mount
// namespace of its own (apply/module_mounts.hpp): a private /dev/shm, the writable
// directories noexec, a fresh /proc with hidepid=invisible, a private devpts. Every property
// is tried from inside a real sandboxed payload, the allowed thing and the forbidden one, by
// more than one route; the two-module tests run two modules at once.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "background_run.hpp"
#include "sandbox_fixture.hpp"

namespace oarbank::it {
namespace {

using namespace std::chrono_literals;

class OwnMounts : public UncappedTest {
 protected:
  void SetUp() override {
    if (!running_as_root()) GTEST_SKIP() << "the module's own mounts are made as root only";
    if (namespace_stock_asked()) {
      stock_.emplace(tree.path("state"), launcher_environment(), tree.path("stock.log"));
      ASSERT_TRUE(stock_->ready()) << stock_->log();
    }
  }
  std::optional<StockServing> stock_;  // only for the "stock." copies of the tests
  std::vector<std::string> env() const {
    auto e = launcher_environment();
    e.push_back("OARBANK_STATE_DIR=" + tree.path("state"));
    return e;
  }
  std::vector<std::string> run_argv(const nlohmann::json& policy,
                                    const std::vector<std::string>& module,
                                    const std::string& config = "") {
    const std::string file =
        tree.write_json("mounts-" + std::to_string(++count_) + ".json", policy);
    std::vector<std::string> argv{OARBANK_AGENT_BINARY,
                                  "sandbox-run",
                                  "--config",
                                  config.empty() ? config_path : config,
                                  "--id",
                                  unique_name("mnt"),
                                  file,
                                  "--"};
    argv.insert(argv.end(), module.begin(), module.end());
    return argv;
  }
  RunResult run(const nlohmann::json& policy, const std::vector<std::string>& module,
                const std::string& config = "") {
    RunOptions o;
    o.env = env();
    o.timeout = 20s;
    return run_command(run_argv(policy, module, config), o);
  }
  // The payload's batch: each sub-command's line, in one sandboxed process.
  RunResult batch(const nlohmann::json& policy, const std::vector<std::vector<std::string>>& subs,
                  const std::string& config = "") {
    std::vector<std::string> module{tree.probe(), "batch"};
    for (const auto& sub : subs) {
      module.insert(module.end(), sub.begin(), sub.end());
      module.emplace_back(",");
    }
    return run(policy, module, config);
  }
  static std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  void expect_lines(const RunResult& r, const std::vector<std::string>& expected) {
    EXPECT_TRUE(r.exited(0)) << r.describe();
    EXPECT_EQ(lines(r.out), expected) << r.describe();
  }
  int count_ = 0;
};

// --- /dev/shm --------------------------------------------------------------------------------

TEST_F(OwnMounts, ShmSemaphoresAndSharedMemoryWork) {
  const std::string sem = unique_name("sem");
  const std::string shm = unique_name("shm");
  auto r = batch(base_policy(), {{"sem-open", sem},
                                 {"shm-open", shm},
                                 {"shm-exists", "sem." + sem},
                                 {"shm-exists", shm},
                                 {"mmap-exec", "/dev/shm/" + shm}});
  // Written there, not executable there either (noexec whatever the policy).
  expect_lines(r, {"ok", "ok", "ok", "ok", "errno EPERM"});
  // Gone with the module: nothing on the node's /dev/shm, during the run or after.
  EXPECT_FALSE(exists("/dev/shm/sem." + sem));
  EXPECT_FALSE(exists("/dev/shm/" + shm));
}

// A real program: Python's multiprocessing keeps its locks and the Pool's queues' semaphores
// in /dev/shm (sem_open). Without the module's own /dev/shm (module_mounts false) Landlock
// grants none, and the Pool fails.
TEST_F(OwnMounts, PythonsMultiprocessingPoolWorks) {
  if (!exists("/usr/bin/python3") || !exists("/usr/lib/python3")) GTEST_SKIP() << "no python3";
  auto policy = base_policy();
  policy["runtime"] = {"/usr/lib/python3", "/usr/lib/python3." + [] {
                         for (const auto& name : list_dir("/usr/lib")) {
                           if (name.starts_with("python3.")) return name.substr(8);
                         }
                         return std::string("11");
                       }()};
  const std::vector<std::string> module{"/usr/bin/python3", "-c",
                                        "import multiprocessing as mp\n"
                                        "with mp.Pool(2) as p: print(p.map(abs, [-1, -2, 3]))"};
  auto r = run(policy, module);
  EXPECT_TRUE(r.exited(0)) << r.describe();
  EXPECT_EQ(r.out, "[1, 2, 3]\n") << r.describe();
  auto config = node_config();
  config["module_mounts"] = false;
  auto shared = run(policy, module, tree.write_json("mounts-off-py.json", config));
  EXPECT_NE(shared.exit_code, 0) << shared.describe();
  EXPECT_NE(shared.err.find("PermissionError"), std::string::npos) << shared.describe();
}

// Two modules at once: what one puts in its /dev/shm, the other and the node never see;
// and neither lists, opens or finds the other's processes in /proc.
TEST_F(OwnMounts, TwoModulesSeeNeitherTheOthersShmNorItsProcesses) {
  const std::string sem = unique_name("sem");
  const std::string shm = unique_name("shm");
  const std::string go = tree.path("work/go");
  BackgroundRun first(run_argv(base_policy(), {tree.probe(), "batch", "getpid", ",", "sem-open",
                                               sem, ",", "shm-open", shm, ",", "wait-file", go}),
                      env(), tree.path("first.out"));
  ASSERT_TRUE(first.wait_lines(3)) << first.output();
  const auto first_lines = lines(first.output());
  ASSERT_EQ(first_lines.size(), 3U) << first.output();
  ASSERT_TRUE(first_lines[0].starts_with("pid ")) << first.output();
  const std::string pid = first_lines[0].substr(4);
  EXPECT_EQ(first_lines[1], "ok");
  EXPECT_EQ(first_lines[2], "ok");
  // The node: not in its /dev/shm while the first module holds them.
  EXPECT_FALSE(exists("/dev/shm/sem." + sem));
  EXPECT_FALSE(exists("/dev/shm/" + shm));
  // The second module, while the first runs: by name, by sem_open and shm_open of the same
  // names (made anew: O_EXCL succeeds), and by listing /proc, opening /proc/PID/status.
  auto second = batch(base_policy(), {{"shm-exists", "sem." + sem},
                                      {"shm-exists", shm},
                                      {"sem-open", sem},
                                      {"shm-open", shm},
                                      {"proc-status", pid},
                                      {"proc-pids"}});
  EXPECT_TRUE(second.exited(0)) << second.describe();
  const auto second_lines = lines(second.out);
  ASSERT_EQ(second_lines.size(), 6U) << second.describe();
  EXPECT_EQ(second_lines[0], "errno ENOENT");
  EXPECT_EQ(second_lines[1], "errno ENOENT");
  EXPECT_EQ(second_lines[2], "ok");
  EXPECT_EQ(second_lines[3], "ok");
  EXPECT_EQ(second_lines[4], "errno ENOENT");
  EXPECT_EQ((second_lines[5] + " ").find(" " + pid + " "), std::string::npos) << second_lines[5];
  write_file(go, "");
  EXPECT_EQ(first.wait(), 0) << first.output();
  EXPECT_EQ(lines(first.output()).back(), "ok");
}

// The module starts in its working directory as its own namespace shows it (the launcher's
// descriptor re-pointed): a relative path from there reaches its own /dev/shm, not the
// node's. The work directory; the bundle (no work or temp), named through a symbolic link.
TEST_F(OwnMounts, TheWorkingDirectoryIsInTheModulesNamespace) {
  ASSERT_EQ(::symlink(tree.path("bundle").c_str(), tree.path("bundle-link").c_str()), 0);
  auto bundle_only = base_policy();
  bundle_only.erase("work");
  bundle_only.erase("temp");
  auto linked = bundle_only;
  linked["bundle"] = tree.path("bundle-link");
  const std::string up = "../../../dev/shm/sem.";  // from /tmp/oarbank-it-*/{work,bundle}
  for (const auto& policy : {base_policy(), bundle_only, linked}) {
    const std::string sem = unique_name("sem");
    expect_lines(batch(policy, {{"sem-open", sem}, {"read", up + sem}}), {"ok", "ok"});
  }
}

// --- /proc -------------------------------------------------------------------------------------

TEST_F(OwnMounts, ProcShowsTheModulesOwnProcessesAlone) {
  // Root's init, this test (root) and sandbox-run (root) are not there; the module is.
  const std::string self = std::to_string(::getpid());
  auto r = batch(base_policy(), {{"proc-status", "1"},
                                 {"proc-status", self},
                                 {"proc-status", "self"},
                                 {"getpid"},
                                 {"proc-pids"},
                                 {"kill", "1", "0"}});
  EXPECT_TRUE(r.exited(0)) << r.describe();
  const auto out = lines(r.out);
  ASSERT_EQ(out.size(), 6U) << r.describe();
  EXPECT_EQ(out[0], "errno ENOENT");
  EXPECT_EQ(out[1], "errno ENOENT");
  EXPECT_EQ(out[2], "ok");
  // The only process the module has is itself: the list is exactly its pid.
  EXPECT_EQ(out[4], "pids " + out[3].substr(4)) << r.describe();
  // kill(pid, 0) is not /proc: it still tells that a process exists (EPERM, not ESRCH).
  EXPECT_EQ(out[5], "errno EPERM");
}

// --- written code ----------------------------------------------------------------------------

TEST_F(OwnMounts, AWrittenFileIsNotMappedExecutableNorLoadedByTheDynamicLoader) {
  const std::string copy = tree.path("work/true");
  copy_file("/bin/true", copy, 0755);
  ASSERT_EQ(::chown(copy.c_str(), module_uid(), module_gid()), 0);
  auto r = batch(base_policy(),
                 {{"mmap-exec", copy}, {"mprotect-exec", copy}, {"mmap-exec", tree.probe()}});
  expect_lines(r, {"errno EPERM", "errno EACCES", "ok"});
  // With exec_writable the module asked for it: mapped.
  auto allowed = with(base_policy(), "exec_writable", true);
  expect_lines(batch(allowed, {{"mmap-exec", copy}, {"mprotect-exec", copy}}), {"ok", "ok"});

  // The dynamic loader, run as the module's program (the base system grants it), maps the
  // written file's segments executable: refused by the noexec mount; with exec_writable,
  // loaded and run. (Not in the kernel matrix's busybox guest: no dynamic loader there.)
  constexpr const char* kLoader = "/lib64/ld-linux-x86-64.so.2";
  if (!exists(kLoader)) GTEST_SKIP() << "no " << kLoader << ": mmap refused, ld.so not tried";
  auto loader = run(base_policy(), {kLoader, copy});
  EXPECT_EQ(loader.exit_code, 127) << loader.describe();
  EXPECT_NE(loader.err.find("failed to map segment"), std::string::npos) << loader.describe();
  // Session 16's review: no refusal is recorded for a noexec mount; sandbox-run names the
  // policy element that would allow it.
  EXPECT_NE(loader.err.find("the module exited 127: if it ran or loaded a program it wrote in "
                            "work, data or temp, those are mounted noexec"),
            std::string::npos)
      << loader.describe();
  auto loaded = run(allowed, {kLoader, copy});
  EXPECT_TRUE(loaded.exited(0)) << loaded.describe();
}

// Session 19's real-programs review: cargo (101), ctest and CPython's tests fail otherwise than
// with 126 or 127 when what they built will not run; a failure after the module wrote an
// executable file in a writable directory names the file and exec_writable. The noexec mount
// refuses the exec before Landlock is asked, so no refusal is recorded; a success says nothing.
TEST_F(OwnMounts, AFailureAfterWritingAnExecutableNamesTheFileAndExecWritable) {
  const std::string built = tree.path("work/built");
  // Session 20's real-programs review: the line is --result's "notes" too.
  const std::string result = tree.path("built-result.json");
  auto argv = run_argv(base_policy(),
                       {tree.probe(), "batch", "copy-exec", tree.probe(), built, ",", "exit", "3"});
  argv.insert(argv.begin() + 2, {"--result", result});
  RunOptions o;
  o.env = env();
  o.timeout = 20s;
  auto failed = run_command(argv, o);
  EXPECT_EQ(failed.exit_code, 3) << failed.describe();
  const auto notes = nlohmann::json::parse(read_file(result))["notes"];
  ASSERT_EQ(notes.size(), 1U) << notes.dump();
  EXPECT_TRUE(notes[0].get<std::string>().starts_with(
      "the module exited 3 after writing the executable file"))
      << notes.dump();
  EXPECT_NE(failed.err.find("the module exited 3 after writing the executable file \"" + built +
                            "\": if it ran or loaded that or another program it wrote in work, "
                            "data or temp, those are mounted noexec"),
            std::string::npos)
      << failed.describe();
  EXPECT_NE(failed.err.find("\"exec_writable\": true allows it"), std::string::npos)
      << failed.describe();
  auto succeeded = run(base_policy(), {tree.probe(), "batch", "copy-exec", tree.probe(),
                                       tree.path("work/built2"), ",", "exit", "0"});
  EXPECT_EQ(succeeded.exit_code, 0) << succeeded.describe();
  EXPECT_EQ(succeeded.err.find("mounted noexec"), std::string::npos) << succeeded.describe();
  // Session 20's real-programs review: CMake's try_run fails on the noexec mount and configure
  // exits 0; with --denials (what was refused, said on success too) the line comes on success.
  auto asked = run_argv(base_policy(), {tree.probe(), "batch", "copy-exec", tree.probe(),
                                        tree.path("work/built3"), ",", "exit", "0"});
  asked.insert(asked.begin() + 2, "--denials");
  auto asked_run = run_command(asked, o);
  EXPECT_EQ(asked_run.exit_code, 0) << asked_run.describe();
  EXPECT_NE(asked_run.err.find("the module exited 0 after writing the executable file \"" +
                               tree.path("work/built3") + "\""),
            std::string::npos)
      << asked_run.describe();
  // Session 19's diff review: a file whose times the module moved ahead (touch -d 2100) is not
  // named by a later failing run: its change time is the kernel's.
  struct timespec future[2] = {{4102444800, 0}, {4102444800, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, built.c_str(), future, 0), 0);
  std::this_thread::sleep_for(20ms);  // the coarse clock past the utimensat's change time
  auto later = run(base_policy(), {tree.probe(), "exit", "2"});
  EXPECT_EQ(later.exit_code, 2) << later.describe();
  EXPECT_EQ(later.err.find("mounted noexec"), std::string::npos) << later.describe();
  // Session 20's real-programs review: the supervisor walks as root, and named another
  // module's file in a directory this module cannot list. Now only the module's own files, in
  // directories it may list, are named: not root's executable beside its own, nor a file in a
  // 0700 directory of another user's, written while the module ran.
  const std::string hidden = tree.path("work/hidden");
  ASSERT_EQ(::mkdir(hidden.c_str(), 0700), 0);
  std::thread writer([&] {
    std::this_thread::sleep_for(100ms);  // while the module sleeps: after its spawn
    copy_file(tree.probe(), hidden + "/other-module-secret", 0755);
    copy_file(tree.probe(), tree.path("work/roots-program"), 0755);
  });
  auto others = run(base_policy(), {tree.probe(), "batch", "sleep-ms", "400", ",", "exit", "2"});
  writer.join();
  ASSERT_TRUE(exists(hidden + "/other-module-secret"));
  EXPECT_EQ(others.exit_code, 2) << others.describe();
  EXPECT_EQ(others.err.find("mounted noexec"), std::string::npos) << others.describe();
}

// Session 19's real-programs review: glibc's tmpfile(3), ed and scripts write in /tmp whatever
// TMPDIR says, and were refused. Where no path of the policy lies below /tmp, the module has a
// /tmp of its own (a tmpfs, granted as temp is), which the node never sees; the tree's own
// policies (below /tmp) keep the node's /tmp, refused as before.
TEST_F(OwnMounts, ItsOwnTmpWhereThePolicyLeavesItFree) {
  // A tree outside /tmp: /var/tmp, or /run where there is none (the kernel matrix's guests).
  std::string made;
  for (const char* parent : {"/var/tmp", "/run"}) {
    std::string pattern = std::string(parent) + "/oarbank-it-tmp-XXXXXX";
    if (::mkdtemp(pattern.data()) != nullptr) {
      made = pattern;
      break;
    }
  }
  if (made.empty()) GTEST_SKIP() << "no directory outside /tmp to make a tree in";
  struct RemoveAll {
    std::string root;
    ~RemoveAll() { std::filesystem::remove_all(root); }
  } outside{made};
  const std::string& root = outside.root;
  ASSERT_EQ(::chmod(root.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((root + "/bundle").c_str(), 0755), 0);
  copy_file(tree.probe(), root + "/bundle/probe", 0755);
  ASSERT_EQ(::mkdir((root + "/work").c_str(), 0700), 0);
  ASSERT_EQ(::chown((root + "/work").c_str(), module_uid(), module_gid()), 0);
  const nlohmann::json policy = {
      {"bundle", root + "/bundle"}, {"runtime", {"/usr"}}, {"work", root + "/work"}};
  const std::string name = "/tmp/" + unique_name("own-tmp");
  auto own = run(policy, {root + "/bundle/probe", "batch", "write", name, ",", "read", name});
  expect_lines(own, {"ok", "ok"});
  EXPECT_FALSE(exists(name)) << "the module wrote the node's " << name;
  auto tree_policy = batch(base_policy(), {{"write", name}});
  expect_lines(tree_policy, {"errno EACCES"});
  EXPECT_FALSE(exists(name));
  // Session 20's attack review: a program written there and run fails on the noexec tmpfs, and
  // the line after the failing exit names its own /tmp too.
  auto written = run(policy, {root + "/bundle/probe", "batch", "copy-exec", root + "/bundle/probe",
                              name, ",", "exit", "126"});
  EXPECT_EQ(written.exit_code, 126) << written.describe();
  EXPECT_EQ(written.out, "errno EACCES\n") << written.describe();
  EXPECT_NE(written.err.find("wrote in work, data, temp or its own /tmp, those are mounted noexec"),
            std::string::npos)
      << written.describe();
  // Session 21's real-programs review: exiting otherwise (make's exit 2, a script's 3), the
  // program written in its own /tmp is named too: the walk looks there through the tmpfs the
  // launcher sent, its mount namespace being gone with the module.
  auto other_exit = run(policy, {root + "/bundle/probe", "batch", "copy-exec",
                                 root + "/bundle/probe", name, ",", "exit", "3"});
  EXPECT_EQ(other_exit.exit_code, 3) << other_exit.describe();
  EXPECT_NE(
      other_exit.err.find("the module exited 3 after writing the executable file \"" + name + "\""),
      std::string::npos)
      << other_exit.describe();
  // And a module that failed with its own /tmp full is told its size and where big files go.
  auto full = run(policy, {root + "/bundle/probe", "batch", "fill", name, ",", "exit", "1"});
  EXPECT_EQ(full.exit_code, 1) << full.describe();
  EXPECT_EQ(full.out, "errno ENOSPC\n") << full.describe();
  EXPECT_NE(full.err.find("its own /tmp (a tmpfs of "), std::string::npos) << full.describe();
  EXPECT_NE(full.err.find("was full or nearly at its end: a write past it answers ENOSPC, which "
                          "no refusal records; big temporary files belong in the policy's "
                          "\"temp\" (TMPDIR, on disk), which this policy does not name"),
            std::string::npos)
      << full.describe();
}

// Code run through a descriptor, by execveat(fd, "", AT_EMPTY_PATH) and by execve of
// /proc/self/fd/N. A memfd lives on the kernel's internal tmpfs, which Landlock lets through
// and no mount of ours covers: the filter refuses memfd_create without MFD_NOEXEC_SEAL
// (ENOSYS), and a sealed one has no execute bit (the kernel: EACCES), whatever the policy. A
// written file opened from a writable directory: Landlock (no execute right) and the noexec
// mount refuse it without exec_writable; with it, the module asked to run what it writes.
TEST_F(OwnMounts, CodeRunThroughADescriptorIsRefused) {
  const std::string copy = tree.path("work/probe-copy");
  copy_file(tree.probe(), copy, 0755);
  ASSERT_EQ(::chown(copy.c_str(), module_uid(), module_gid()), 0);
  for (bool exec_writable : {false, true}) {
    SCOPED_TRACE(exec_writable ? "exec_writable" : "exec_writable false");
    auto policy = with(base_policy(), "exec_writable", exec_writable);
    const std::string written = exec_writable ? "ok" : "errno EACCES";
    auto r = batch(policy, {{"memfd-execveat", tree.probe()},
                            {"memfd-proc-exec", tree.probe()},
                            {"sealed-memfd-execveat", tree.probe()},
                            {"sealed-memfd-proc-exec", tree.probe()},
                            {"fd-execveat", copy},
                            {"fd-proc-exec", copy},
                            {"fd-execveat", tree.probe()},
                            {"fd-proc-exec", tree.probe()}});
    // The payload itself, from the bundle, through a descriptor: allowed (it prints "ok").
    expect_lines(r, {"errno ENOSYS", "errno ENOSYS", "errno EACCES", "errno EACCES", written,
                     written, "ok", "ok"});
  }
}

// --- the pty -------------------------------------------------------------------------------

TEST_F(OwnMounts, AModuleMakesPtysOfItsOwnAndSeesNoneOfTheNodes) {
  Pty node_pty;  // one of the node's: /dev/pts/N there, not in the module's /dev/pts
  const std::string node_pts = list_dir("/dev/pts").size() > 1 ? "more" : "none";
  ASSERT_EQ(node_pts, "more");
  auto r = batch(base_policy(), {{"pts-list"}, {"openpty"}, {"pts-list"}});
  expect_lines(r, {"pts ptmx", "ok", "pts 0 ptmx"});
}

// --- nothing the module does undoes them --------------------------------------------------------

TEST_F(OwnMounts, TheModuleCannotUndoItsMounts) {
  const std::string work = tree.path("work");
  auto r = batch(base_policy(), {{"umount", "/dev/shm"},
                                 {"umount", "/proc"},
                                 {"remount-exec", work},
                                 {"mount-setattr-exec", work},
                                 {"mount-tmpfs", work},
                                 {"unshare", "0x20000"},
                                 {"open_tree"},
                                 {"fsopen"}});
  expect_lines(r, {"errno EPERM", "errno EPERM", "errno EPERM", "errno EPERM", "errno EPERM",
                   "errno EPERM", "errno EPERM", "errno EPERM"});
}

// --- turned off, refused --------------------------------------------------------------------

// module_mounts false: the module runs on the node's mounts, and is granted none of them.
TEST_F(OwnMounts, TheNodeKeyTurnsThemOff) {
  auto config = node_config();
  config["module_mounts"] = false;
  const std::string off = tree.write_json("mounts-off.json", config);
  const std::string self = std::to_string(::getpid());
  auto r = batch(base_policy(),
                 {{"sem-open", unique_name("sem")}, {"proc-status", self}, {"pts-list"}}, off);
  EXPECT_TRUE(r.exited(0)) << r.describe();
  const auto out = lines(r.out);
  ASSERT_EQ(out.size(), 3U) << r.describe();
  EXPECT_EQ(out[0], "errno EACCES");  // the node's /dev/shm: not granted
  EXPECT_EQ(out[1], "ok");            // the node's /proc
  EXPECT_EQ(out[2], "pts errno EACCES");
}

// The report's rows: enforced for root (sandbox-run makes them), unavailable, saying why,
// for a user (unprivileged sandbox-run and sandbox-exec run on the node's mounts).
TEST_F(OwnMounts, TheReportSaysWhereTheyAreMade) {
  auto rows = [&](std::optional<std::pair<uid_t, gid_t>> user) {
    RunOptions o;
    o.user = user;
    auto r =
        run_command({OARBANK_AGENT_BINARY, "sandbox-report", "--config", config_path, "--json"}, o);
    EXPECT_TRUE(r.exited(0)) << r.describe();
    std::map<std::string, std::pair<std::string, std::string>> out;
    const nlohmann::json report = nlohmann::json::parse(r.out);  // kept: the loop reads into it
    for (const auto& row : report.at("rows")) {
      out[row.at("row").get<std::string>()] = {row.at("status").get<std::string>(),
                                               row.value("reason", std::string())};
    }
    return out;
  };
  const auto root = rows(std::nullopt);
  const auto user = rows(std::pair<uid_t, gid_t>{65534, 65534});
  for (const char* row :
       {"mounts.shm", "mounts.tmp", "mounts.noexec", "mounts.proc", "mounts.pts"}) {
    EXPECT_EQ(root.at(row).first, "enforced") << row;
    EXPECT_EQ(user.at(row).first, "unavailable") << row;
    EXPECT_NE(user.at(row).second.find("not root"), std::string::npos) << user.at(row).second;
  }
  EXPECT_NE(root.at("known-limit.exec-writable").second.find("noexec"), std::string::npos);
  EXPECT_NE(user.at("known-limit.exec-writable").second.find("the dynamic loader"),
            std::string::npos);
}

// Fail closed: root without CAP_SYS_ADMIN (a container's root) cannot make the module's
// mounts, and the node asks for them: refused with 70 naming the step and the key, before
// anything runs. With module_mounts false the same module runs on the node's mounts.
TEST_F(OwnMounts, WithoutCapSysAdminTheRunIsRefused) {
  if (!exists("/usr/bin/setpriv")) GTEST_SKIP() << "no /usr/bin/setpriv to drop CAP_SYS_ADMIN";
  auto argv = run_argv(base_policy(), {tree.probe(), "true"});
  argv.insert(argv.begin(),
              {"/usr/bin/setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin", "--"});
  RunOptions o;
  o.env = env();
  o.timeout = 20s;
  auto r = run_command(argv, o);
  EXPECT_EQ(r.exit_code, 70) << r.describe();
  EXPECT_EQ(r.err_line_count(), 1U) << r.describe();
  EXPECT_NE(r.err.find("step mounts failed: module_mounts is true in the node configuration, "
                       "and the agent lacks CAP_SYS_ADMIN"),
            std::string::npos)
      << r.describe();
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace oarbank::it
