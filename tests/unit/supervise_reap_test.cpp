// supervise()'s reaping of the module's first process (docs/denials.md, attribution): on every
// path (exit, --timeout, a failed verification, a failed launcher, orphans left behind) the
// first process is still an unreaped zombie when before_reap runs (the audit reader stops
// there, attributing Landlock's records by that pid), and after supervise() no child of this
// process is left, zombie or not. Needs root (the stand-in launcher becomes 65534, as the
// verification requires); a few tens of milliseconds in all.
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "plan/status_line.hpp"
#include "probe/proc_status.hpp"
#include "supervise/run_state.hpp"
#include "supervise/supervisor.hpp"
#include "sys/text_file.hpp"

namespace oarbank {
namespace {

struct ReapLauncher {
  const char* command = nullptr;  // sh -c COMMAND after the steps
  bool fail = false;              // report a failure instead of the exec
};

// The launcher's steps the verification checks, by raw system calls: the child shares this
// process's memory until its exec (CLONE_VM | CLONE_VFORK), so no libc wrapper that keeps
// state (glibc's setxid broadcast to threads).
void reap_test_launcher(void* raw, int status_fd) {
  const auto* launcher = static_cast<const ReapLauncher*>(raw);
  if (launcher->fail) {
    static constexpr char kLine[] = "70\tthe stand-in launcher failed\n";
    [[maybe_unused]] auto n = ::write(status_fd, kLine, sizeof kLine - 1);
    ::_exit(70);
  }
  ::syscall(SYS_setgroups, 0, nullptr);
  for (int cap = 0; cap < 64; ++cap) ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  if (::syscall(SYS_setresgid, 65534, 65534, 65534) != 0 ||
      ::syscall(SYS_setresuid, 65534, 65534, 65534) != 0) {
    ::_exit(71);
  }
  ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  static sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  static sock_fprog program = {1, allow};
  ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0);
  [[maybe_unused]] auto n = ::write(status_fd, kStatusExecLine.text.data(), kStatusExecLine.size);
  const char* argv[] = {"sh", "-c", launcher->command, nullptr};
  ::execve("/bin/sh", const_cast<char* const*>(argv), environ);
  ::_exit(71);
}

class SuperviseReap : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the stand-in launcher needs root";
    std::string pattern = (std::filesystem::temp_directory_path() / "oarbank-reap-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    base_ = pattern;
  }
  void TearDown() override {
    if (!base_.empty()) std::filesystem::remove_all(base_);
  }

  // One supervised run; `seen_zombie`: what before_reap found.
  RunResult run(ReapLauncher launcher, ExecExpectation expected, std::optional<double> timeout) {
    RunRecord intent;
    intent.id = "reap";
    intent.supervisor_pid = ::getpid();
    intent.supervisor_start_time = process_start_time(::getpid());
    RunState state = RunState::claim(base_ + "/runs", intent);
    SupervisedLaunch launch;
    launch.id = "reap";
    launch.launcher = &reap_test_launcher;
    launch.launcher_context = &launcher;
    launch.expected = expected;
    launch.timeout_seconds = timeout;
    launch.kill_after_seconds = 0.05;
    launch.usage = false;
    pid_t module = 0;
    launch.after_spawn = [&module](pid_t pid) { module = pid; };
    hook_calls_ = 0;
    seen_zombie_ = false;
    launch.before_reap = [&] {
      ++hook_calls_;
      siginfo_t info{};
      const bool unreaped =
          ::waitid(P_PID, module, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == module;
      const std::string stat = read_text_file("/proc/" + std::to_string(module) + "/stat");
      const auto paren = stat.rfind(')');
      seen_zombie_ = unreaped && paren != std::string::npos && stat.substr(paren + 2, 1) == "Z";
    };
    RunResult result = supervise(launch, state);
    state.finish();
    siginfo_t info{};
    no_child_left_ = ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG) < 0 && errno == ECHILD;
    return result;
  }

  ExecExpectation sandboxed() const {
    ExecExpectation expected{65534, 65534, true};
    expected.inherited_seccomp_filters =
        parse_proc_status(read_text_file("/proc/self/status")).seccomp_filters.value_or(0);
    return expected;
  }

  std::string base_;
  int hook_calls_ = 0;
  bool seen_zombie_ = false;
  bool no_child_left_ = false;
};

TEST_F(SuperviseReap, TheModulesExitIsTakenWithoutReapingItUntilAfterBeforeReap) {
  RunResult r = run({"exit 3"}, sandboxed(), std::nullopt);
  EXPECT_EQ(r.end, RunEnd::Exited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(hook_calls_, 1);
  EXPECT_TRUE(seen_zombie_);
  EXPECT_TRUE(no_child_left_);
}

TEST_F(SuperviseReap, OrphansAreReapedAndTheFirstProcessKeptUntilBeforeReap) {
  // Two orphans reparented to the subreaper: one in the module's group, one in a session of
  // its own (the group's SIGKILL misses it), both still running when the first process exits.
  RunResult r = run({"sleep 5 & setsid sleep 5 & exit 4"}, sandboxed(), std::nullopt);
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(hook_calls_, 1);
  EXPECT_TRUE(seen_zombie_);
  EXPECT_TRUE(no_child_left_);
}

TEST_F(SuperviseReap, ATimeoutKillsReapsOnceAndKeepsTheZombieUntilBeforeReap) {
  RunResult r = run({"trap '' TERM; sleep 5"}, sandboxed(), 0.05);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, kExitTimedOut);
  EXPECT_EQ(hook_calls_, 1);
  EXPECT_TRUE(seen_zombie_);
  EXPECT_TRUE(no_child_left_);
}

TEST_F(SuperviseReap, AFailedVerificationOrLauncherKeepsTheZombieUntilBeforeReap) {
  ExecExpectation wrong = sandboxed();
  wrong.uid = 12345;
  RunResult r = run({"sleep 5"}, wrong, std::nullopt);
  EXPECT_EQ(r.end, RunEnd::VerificationFailed);
  EXPECT_EQ(hook_calls_, 1);
  EXPECT_TRUE(seen_zombie_);
  EXPECT_TRUE(no_child_left_);

  r = run({"", true}, sandboxed(), std::nullopt);
  EXPECT_EQ(r.end, RunEnd::LauncherFailed);
  EXPECT_EQ(r.exit_code, 70);
  EXPECT_EQ(hook_calls_, 1);
  EXPECT_TRUE(seen_zombie_);
  EXPECT_TRUE(no_child_left_);
}

}  // namespace
}  // namespace oarbank
