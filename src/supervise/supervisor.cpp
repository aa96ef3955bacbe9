#include "supervise/supervisor.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <nlohmann/json.hpp>
#include <sstream>

#include "probe/proc_status.hpp"
#include "supervise/spawn.hpp"
#include "sys/error.hpp"
#include "sys/text_file.hpp"

namespace oarbank {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxStatusBytes = 4096;
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

void arm_timer(int timer_fd, double seconds) {
  itimerspec spec{};
  if (seconds > 0) {
    double whole = std::floor(seconds);
    spec.it_value.tv_sec = static_cast<time_t>(whole);
    spec.it_value.tv_nsec = static_cast<long>((seconds - whole) * 1e9);
    if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
  }
  ::timerfd_settime(timer_fd, 0, &spec, nullptr);
}

// The module's container, as the supervisor acts on it.
class Container {
 public:
  // The group by its leader's pidfd (spawn.hpp): still the module's after the leader is
  // reaped, never a group that reused the number.
  Container(std::optional<CgroupLeaf>& leaf, pid_t group, int leader_pidfd)
      : leaf_(leaf), group_(group), leader_pidfd_(leader_pidfd) {}

  // Every process of the module, not only the group: one that called setsid() too.
  void signal_all(int sig) {
    signal_process_group(leader_pidfd_, group_, sig);
    if (leaf_) {
      for (int pid : read_cgroup_pids(leaf_->path())) ::kill(pid, sig);
    }
  }

  void kill_all() {
    if (leaf_) {
      kill_cgroup(leaf_->path());
    } else {
      signal_process_group(leader_pidfd_, group_, SIGKILL);
    }
  }

 private:
  std::optional<CgroupLeaf>& leaf_;
  pid_t group_;
  int leader_pidfd_;
};

// Without a cgroup, this process is the subreaper (PR_SET_CHILD_SUBREAPER): a descendant
// that left the group with setsid() and whose parent died is reparented here, so it is found
// as a child of ours. Kill and reap until no child is left.
void kill_and_reap_descendants(pid_t group, int leader_pidfd) {
  signal_process_group(leader_pidfd, group, SIGKILL);
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline) {
    if (DIR* tasks = ::opendir("/proc/self/task")) {
      while (const dirent* task = ::readdir(tasks)) {
        if (task->d_name[0] == '.') continue;
        std::istringstream children(
            read_text_file(std::string("/proc/self/task/") + task->d_name + "/children"));
        for (int pid = 0; children >> pid;) ::kill(pid, SIGKILL);
      }
      ::closedir(tasks);
    }
    int status = 0;
    pid_t reaped = 0;
    while ((reaped = ::waitpid(-1, &status, WNOHANG)) > 0) {
    }
    if (reaped < 0 && errno == ECHILD) return;
    ::usleep(2000);
  }
}

// An interactive run: sandbox-run is the terminal's foreground job. The module's group takes
// the foreground (so it reads the terminal and gets ^C like any job), and gets it back from
// sandbox-run when it stops and is continued; the terminal's settings are restored at the
// end, whatever the module left them as.
struct Terminal {
  bool given = false;
  termios saved{};

  void give(pid_t group) {
    if (::isatty(STDIN_FILENO) == 0 || ::tcgetpgrp(STDIN_FILENO) != ::getpgrp()) return;
    if (::tcgetattr(STDIN_FILENO, &saved) != 0) return;
    given = ::tcsetpgrp(STDIN_FILENO, group) == 0;
  }
  void take_back() const {
    if (!given) return;
    ::tcsetpgrp(STDIN_FILENO, ::getpgrp());  // SIGTTOU is blocked: allowed from the background
    ::tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
  }
  // The module stopped (^Z, SIGTTIN): stop as a shell's job would, so the shell that started
  // sandbox-run gets its terminal back; once continued (fg), hand the terminal to the module
  // again and continue it. Without a terminal a stopped module is left as it is.
  void module_stopped(pid_t group) const {
    if (!given) return;
    take_back();
    ::kill(::getpid(), SIGSTOP);
    ::tcsetpgrp(STDIN_FILENO, group);
    ::kill(-group, SIGCONT);
  }
};

struct StatusChannel {
  std::string text;
  bool exec_happened() const { return text.find("exec\n") != std::string::npos; }
  // The launcher's "CODE<TAB>LINE" when it reported a failure.
  std::optional<std::pair<int, std::string>> failure() const {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      auto tab = line.find('\t');
      if (tab == std::string::npos || tab == 0 || tab > 3) continue;
      int code = 0;
      for (std::size_t i = 0; i < tab; ++i) {
        if (line[i] < '0' || line[i] > '9') return std::make_pair(kExitSoftware, line);
        code = code * 10 + (line[i] - '0');
      }
      return std::make_pair(code, line.substr(tab + 1));
    }
    return std::nullopt;
  }
};

// A wait status (as waitpid gives it) to the exit code a shell would show.
int status_to_exit_code(int wstatus, RunResult& result) {
  if (WIFEXITED(wstatus)) {
    result.module_status = WEXITSTATUS(wstatus);
    return result.module_status;
  }
  result.module_signal = WTERMSIG(wstatus);
  return 128 + result.module_signal;
}

}  // namespace

RunResult supervise(SupervisedLaunch& launch, RunState& state) {
  RunResult result;
  const auto started = Clock::now();
  const bool process_group_only = !launch.leaf;
  if (process_group_only) ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

  // Signals arrive through a signalfd, so that the loop below sees them in order with the
  // child's exit; the launcher gets the mask this process started with.
  sigset_t handled, original;
  ::sigemptyset(&handled);
  for (int sig : kStopSignals) ::sigaddset(&handled, sig);
  ::sigaddset(&handled, SIGCHLD);
  sigset_t blocked = handled;
  // Taking the terminal back from the module's group, later, is a background tcsetpgrp.
  ::sigaddset(&blocked, SIGTTOU);
  ::sigprocmask(SIG_BLOCK, &blocked, &original);
  UniqueFd signal_fd(::signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK));
  UniqueFd timer_fd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  int channel[2];
  if (!signal_fd.valid() || !timer_fd.valid() || ::pipe2(channel, O_CLOEXEC) != 0) {
    ::sigprocmask(SIG_SETMASK, &original, nullptr);
    throw Error(ErrorKind::StepFailed, "step spawn failed: signalfd, timerfd or pipe2: " +
                                           errno_text(errno));
  }
  UniqueFd status_read(channel[0]);
  UniqueFd status_write(channel[1]);

  // The child records itself (its pid, as module and group leader, and its start time)
  // before anything else, so that from its first instruction on a killed sandbox-run leaves a
  // record naming it: in a leaf it would be found anyway, in a process group only it would
  // not. This process cannot do it in time: CLONE_VFORK suspends it until the child's exec.
  const std::string record_prefix = state.child_record_prefix();
  struct ChildContext {
    SupervisedLaunch* launch;
    int status_fd;
    int record_fd;
    const std::string* record_prefix;
  } context{&launch, status_write.get(), state.fd(), &record_prefix};
  SpawnRequest request{.cgroup_dir_fd = launch.leaf ? launch.leaf->dir_fd() : -1,
                       .status_write_fd = status_write.get(),
                       .child_mask = &original,
                       .child_main =
                           [](void* raw) {
                             auto* c = static_cast<ChildContext*>(raw);
                             if (record_self_as_module(c->record_fd, c->record_prefix->data(),
                                                       c->record_prefix->size()) != 0) {
                               static constexpr char kLine[] =
                                   "70\tstep run-state failed: the module's process could not "
                                   "record itself in its run record\n";
                               [[maybe_unused]] auto n =
                                   ::write(c->status_fd, kLine, sizeof kLine - 1);
                               ::_exit(kExitSoftware);
                             }
                             c->launch->launcher(c->launch->launcher_context, c->status_fd);
                           },
                       .context = &context};
  Spawned child;
  try {
    child = spawn_launcher(request);
  } catch (...) {
    ::sigprocmask(SIG_SETMASK, &original, nullptr);
    throw;
  }
  status_write.reset();
  if (launch.after_spawn) launch.after_spawn();
  const pid_t group = child.pid;
  Container container(launch.leaf, group, child.pidfd.get());
  // (The child has recorded itself in `state` already.)
  Terminal terminal;
  terminal.give(group);

  enum class Timer { None, Timeout, Grace } timer = Timer::None;
  if (launch.timeout_seconds) {
    arm_timer(timer_fd.get(), *launch.timeout_seconds);
    timer = Timer::Timeout;
  }
  bool stopping = false;
  bool verified = false;
  bool reaped = false;
  int module_wstatus = 0;
  auto begin_stop = [&](int sig) {
    if (stopping || !verified) {
      container.kill_all();  // a second request, or the module has not been verified yet
      return;
    }
    stopping = true;
    container.signal_all(sig);
    arm_timer(timer_fd.get(), launch.kill_after_seconds);
    timer = Timer::Grace;
  };
  // After the verification: reap every child, the module's status kept. Only a subreaper
  // (no cgroup) has other children: orphans of the module, which would pile up as zombies.
  auto on_child = [&]() {
    if (!verified) return;  // the module's zombie is what the verification reads
    int wstatus = 0;
    for (pid_t pid; (pid = ::waitpid(-1, &wstatus, WNOHANG | WUNTRACED)) > 0;) {
      if (pid != child.pid) continue;
      if (WIFSTOPPED(wstatus)) {
        terminal.module_stopped(group);
      } else {
        module_wstatus = wstatus;
        reaped = true;
      }
    }
  };
  auto on_signal = [&]() {
    signalfd_siginfo info{};
    while (::read(signal_fd.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      if (info.ssi_signo == SIGCHLD) {
        on_child();
        continue;
      }
      if (result.stop_signal == 0) result.stop_signal = static_cast<int>(info.ssi_signo);
      begin_stop(info.ssi_signo == SIGHUP ? SIGTERM : static_cast<int>(info.ssi_signo));
    }
  };
  auto on_timer = [&]() {
    std::uint64_t expirations = 0;
    if (::read(timer_fd.get(), &expirations, sizeof expirations) <= 0) return;
    if (timer == Timer::Timeout) {
      result.timed_out = true;
      begin_stop(SIGTERM);
    } else if (timer == Timer::Grace) {
      container.kill_all();
      timer = Timer::None;
    }
  };

  // 1. The status channel: the launcher's failure, or "exec" and then end of file when the
  // module's exec closed it (close-on-exec).
  StatusChannel channel_text;
  for (;;) {
    pollfd fds[] = {{status_read.get(), POLLIN, 0},
                    {signal_fd.get(), POLLIN, 0},
                    {timer_fd.get(), POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents != 0) on_signal();
    if (fds[2].revents != 0) on_timer();
    if (fds[0].revents != 0) {
      char buffer[512];
      ssize_t n = ::read(status_read.get(), buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (channel_text.text.size() < kMaxStatusBytes) {
        channel_text.text.append(buffer, static_cast<std::size_t>(n));
      }
    }
  }
  status_read.reset();

  auto reap_module = [&]() {
    if (reaped) return;
    if (::waitpid(child.pid, &module_wstatus, 0) == child.pid) reaped = true;
  };

  if (auto failure = channel_text.failure()) {
    reap_module();
    result.end = RunEnd::LauncherFailed;
    result.exit_code = failure->first;
    result.launcher_line = failure->second;
  } else if (!channel_text.exec_happened()) {
    reap_module();
    result.end = RunEnd::LauncherFailed;
    result.exit_code = kExitSoftware;
    RunResult scratch;
    int code = status_to_exit_code(module_wstatus, scratch);
    result.launcher_line = "the launcher ended before the module's exec (" +
                           (scratch.module_signal != 0
                                ? "signal " + std::to_string(scratch.module_signal)
                                : "exit status " + std::to_string(code)) +
                           ")";
  } else {
    // 2. Verification: the exec happened (the module may even have exited already: a zombie
    // keeps its status until it is reaped, which is done only below).
    const ProcStatus status =
        parse_proc_status(read_text_file("/proc/" + std::to_string(child.pid) + "/status"));
    if (auto problem = exec_verification_problem(status, launch.expected)) {
      container.kill_all();
      reap_module();
      result.end = RunEnd::VerificationFailed;
      result.exit_code = kExitSoftware;
      result.verification_problem = *problem;
    } else {
      verified = true;
      // A stop or exit whose SIGCHLD came before this point was left for now (the zombie
      // was still to be verified): look once, as waitpid still reports it.
      on_child();
    }
  }

  // 3. Wait for the module, serving signals, the timeout and the grace period.
  while (verified && !reaped) {
    pollfd fds[] = {{child.pidfd.get(), POLLIN, 0},
                    {signal_fd.get(), POLLIN, 0},
                    {timer_fd.get(), POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents != 0) on_signal();
    if (fds[2].revents != 0) on_timer();
    if (fds[0].revents != 0) on_child();  // the pidfd: the module exited
  }
  if (verified) {
    result.exit_code = status_to_exit_code(module_wstatus, result);
    result.end = result.module_signal != 0 ? RunEnd::Signaled : RunEnd::Exited;
    if (result.timed_out) result.exit_code = kExitTimedOut;
  }

  // 4. Tear down: whatever the module left running dies with it.
  if (launch.leaf) {
    const std::string& leaf = launch.leaf->path();
    container.kill_all();
    result.oom_kills = read_cgroup_key(leaf + "/memory.events", "oom_kill").value_or(0);
    result.cpu_usec = read_cgroup_key(leaf + "/cpu.stat", "usage_usec");
    result.memory_peak_bytes = read_cgroup_number(leaf + "/memory.peak");
    launch.leaf->destroy();
  } else {
    kill_and_reap_descendants(group, child.pidfd.get());
  }
  terminal.take_back();
  ::sigprocmask(SIG_SETMASK, &original, nullptr);
  result.duration_seconds =
      std::chrono::duration<double>(Clock::now() - started).count();
  return result;
}

std::string run_result_to_json(const RunResult& r, const SupervisedLaunch& launch) {
  const char* end = "exited";
  switch (r.end) {
    case RunEnd::Exited:
      end = "exited";
      break;
    case RunEnd::Signaled:
      end = "signaled";
      break;
    case RunEnd::LauncherFailed:
      end = "launcher-failed";
      break;
    case RunEnd::VerificationFailed:
      end = "verification-failed";
      break;
  }
  auto optional = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json j{
      {"id", launch.id},
      {"end", end},
      {"exit_code", r.exit_code},
      {"module_exit_status",
       r.module_status >= 0 ? nlohmann::json(r.module_status) : nlohmann::json(nullptr)},
      {"module_signal", r.module_signal != 0 ? nlohmann::json(r.module_signal) : nlohmann::json(nullptr)},
      {"timed_out", r.timed_out},
      {"stop_signal", r.stop_signal != 0 ? nlohmann::json(r.stop_signal) : nlohmann::json(nullptr)},
      {"oom_killed", r.oom_kills > 0},
      {"container", launch.leaf ? "cgroup" : "process-group"},
      {"launcher_error", r.launcher_line.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.launcher_line)},
      {"verification_error",
       r.verification_problem.empty() ? nlohmann::json(nullptr)
                                      : nlohmann::json(r.verification_problem)},
      {"cpu_usec", optional(r.cpu_usec)},
      {"memory_peak_bytes", optional(r.memory_peak_bytes)},
      {"duration_seconds", r.duration_seconds}};
  return j.dump() + "\n";
}

}  // namespace oarbank
