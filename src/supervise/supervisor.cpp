#include "supervise/supervisor.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
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
#include <exception>
#include <nlohmann/json.hpp>
#include <sstream>

#include "plan/launch_steps.hpp"
#include "plan/status_line.hpp"
#include "probe/proc_status.hpp"
#include "supervise/spawn.hpp"
#include "supervise/terminal_front.hpp"
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

  // Every process of the module, not only the group: one that called setsid() too. Where it
  // has a leaf, the leaf's list alone, once each (session 21's diff reviews: sent to the group
  // and to the leaf, a process in both got it twice and a SIGINT handler re-entered; and a
  // process skipped as the group's could leave the group meanwhile and get it from neither).
  void signal_all(int sig) {
    if (leaf_) {
      signal_cgroup(leaf_->path(), sig);
    } else {
      signal_process_group(leader_pidfd_, group_, sig);
    }
  }

  // cgroup.kill works on a frozen leaf, and SIGKILL ends a stopped process: no thaw needed.
  void kill_all() {
    if (leaf_) {
      kill_cgroup(leaf_->path());
    } else {
      signal_process_group(leader_pidfd_, group_, SIGKILL);
    }
  }

  // The module stopped (^Z, SIGSTOP, SIGTTIN), or its job was: nothing of it runs until it is
  // continued, not even a worker it forked that did not stop. The leaf is frozen
  // (cgroup.freeze, Linux 5.2; a stopped task counts as frozen); without one, or where the
  // write fails, the group is sent SIGSTOP. Not waited for long: the supervisor's loop (the
  // timers) must go on.
  void stop() {
    if (stopped_) return;
    stopped_ = true;
    if (leaf_) {
      int err = set_cgroup_frozen(leaf_->path(), true, 200);
      frozen_ = err == 0 || err == ETIMEDOUT;  // ETIMEDOUT: written; the kernel is freezing
      if (frozen_) return;
    }
    signal_all(SIGSTOP);
  }
  // Thawed, and every process continued (the module itself stopped on a signal).
  void resume() {
    if (!stopped_) return;
    stopped_ = false;
    if (frozen_) set_cgroup_frozen(leaf_->path(), false, 200);
    frozen_ = false;
    signal_all(SIGCONT);
  }

 private:
  std::optional<CgroupLeaf>& leaf_;
  pid_t group_;
  int leader_pidfd_;
  bool stopped_ = false;
  bool frozen_ = false;
};

// This process is a child subreaper (PR_SET_CHILD_SUBREAPER) in every mode: a descendant of
// the module whose parent died is reparented here, not to the node's init, so it is found as
// a child of ours and reaped before sandbox-run returns. Kill every child and reap all but
// `keep` (the module's first process, a zombie until the audit reader has stopped: see
// teardown) until no other child is left: a child is reaped only after its own children were
// reparented here (the kernel reparents them before the parent becomes a zombie), so a pass
// that lists no other child is the end. /proc/PID/task/TID/children lists zombies too.
void kill_and_reap_children(pid_t keep) {
  // No child at all (waitid looks at the children of every thread of this process): nothing
  // to kill or reap, and /proc/self/task need not be read.
  siginfo_t first{};
  if (::waitid(P_ALL, 0, &first, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD) return;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline) {
    bool others = false, pending = false;
    if (DIR* tasks = ::opendir("/proc/self/task")) {
      while (const dirent* task = ::readdir(tasks)) {
        if (task->d_name[0] == '.') continue;
        std::istringstream children(
            read_text_file(std::string("/proc/self/task/") + task->d_name + "/children"));
        for (int pid = 0; children >> pid;) {
          ::kill(pid, SIGKILL);  // `keep` too: it may live outside the module's group
          if (pid == keep) continue;
          others = true;
          if (::waitpid(pid, nullptr, WNOHANG) != pid) pending = true;
        }
      }
      ::closedir(tasks);
    }
    if (!others) return;
    if (pending) ::usleep(2000);
  }
}

// The status channel's text, parsed by plan/status_line.hpp.
struct StatusChannel {
  std::string text;
  bool exec_happened() const { return parse_status_channel(text).exec; }
  // The launcher's "CODE<TAB>LINE" when it reported a failure.
  std::optional<std::pair<int, std::string>> failure() const {
    StatusReport report = parse_status_channel(text);
    if (!report.code) return std::nullopt;
    return std::make_pair(*report.code, std::move(report.line));
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

// One run's supervision, as its phases (plan/launch_steps.hpp): spawn, await-exec, verify,
// wait, teardown, each a method that supervise() calls in order.
class Supervision {
 public:
  // Signals through a signalfd, the timer, the status channel. Throws Error(StepFailed).
  Supervision(SupervisedLaunch& launch, RunState& state);
  ~Supervision() { ::sigprocmask(SIG_SETMASK, &original_, nullptr); }
  Supervision(const Supervision&) = delete;
  Supervision& operator=(const Supervision&) = delete;

  void spawn();
  bool await_exec();  // true: the module's exec happened
  bool verify();      // true: /proc/<pid>/status is as required
  void wait();
  void teardown();
  [[nodiscard]] const RunResult& result() const { return result_; }

 private:
  void begin_stop(int sig);
  void on_child();
  void on_signal();
  void on_timer();
  void on_control();
  void note_module_exit(int options);
  void await_module_exit() { note_module_exit(0); }
  void reap_module();

  SupervisedLaunch& launch_;
  RunState& state_;
  RunResult result_;
  Clock::time_point started_ = Clock::now();
  sigset_t original_{};
  UniqueFd signal_fd_, timer_fd_, status_read_, status_write_;
  Spawned child_;
  std::optional<Container> container_;
  enum class Timer { None, Timeout, Grace } timer_ = Timer::None;
  bool stopping_ = false;
  bool verified_ = false;
  // The module's first process exited (its status is in module_wstatus_), and was reaped: not
  // before the teardown, after launch_.before_reap (the audit reader's stop), so that its pid
  // cannot be another process's while the reader attributes records by it.
  bool exited_ = false;
  bool reaped_ = false;
  int module_wstatus_ = 0;
  int control_fd_ = -1;
  bool torn_down_ = false;
};

Supervision::Supervision(SupervisedLaunch& launch, RunState& state)
    : launch_(launch), state_(state) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  // Signals arrive through a signalfd, so that the loop below sees them in order with the
  // child's exit; the launcher gets the mask this process started with.
  sigset_t handled;
  ::sigemptyset(&handled);
  for (int sig : kStopSignals) ::sigaddset(&handled, sig);
  ::sigaddset(&handled, SIGCHLD);
  // SIGCONT to sandbox-run (to the supervisor, without a terminal) continues a module that
  // stopped: the container was frozen when it did.
  ::sigaddset(&handled, SIGCONT);
  // The job-control stops are read and dropped, never acted on: with setpgid allowed (its own
  // process groups, issue 12) a module's process can join the process group of the module's
  // pty's session leader, this process, and read the pty from the background, so that the
  // kernel sends SIGTTIN (or, by ^Z, SIGTSTP) to that group; left at their default they
  // would stop the supervisor, its --timeout and its teardown with it. The operator's ^Z
  // stops the front (terminal_front.cpp), which asks for the module's stop by its control
  // socket.
  ::sigaddset(&handled, SIGTTIN);
  ::sigaddset(&handled, SIGTSTP);
  sigset_t blocked = handled;
  // Handing the module's pty to the module's group is a tcsetpgrp from outside that group.
  ::sigaddset(&blocked, SIGTTOU);
  ::sigprocmask(SIG_BLOCK, &blocked, &original_);
  signal_fd_ = UniqueFd(::signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK));
  timer_fd_ = UniqueFd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  int channel[2];
  if (!signal_fd_.valid() || !timer_fd_.valid() ||
      // A unix socket, not a pipe: the launcher may send the seccomp listener on it (issue 14).
      ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0) {
    const int err = errno;
    ::sigprocmask(SIG_SETMASK, &original_, nullptr);
    throw Error(ErrorKind::StepFailed,
                step_failed_message(LaunchStep::Spawn,
                                    "signalfd, timerfd or socketpair: " + errno_text(err)));
  }
  status_read_ = UniqueFd(channel[0]);
  status_write_ = UniqueFd(channel[1]);
  if (launch_.terminal != nullptr) control_fd_ = launch_.terminal->control.get();
}

// spawn: the launcher's child, in its group and leaf (spawn.hpp).
void Supervision::spawn() {
  // The child records itself (its pid, as module and group leader, and its start time)
  // before anything else, so that from its first instruction on a killed sandbox-run leaves a
  // record naming it: in a leaf it would be found anyway, in a process group only it would
  // not. This process cannot do it in time: CLONE_VFORK suspends it until the child's exec.
  const std::string record_prefix = state_.child_record_prefix();
  struct ChildContext {
    SupervisedLaunch* launch;
    int status_fd;
    int record_fd;
    const std::string* record_prefix;
  } context{&launch_, status_write_.get(), state_.fd(), &record_prefix};
  SupervisorTerminal* terminal = launch_.terminal;
  SpawnRequest request{
      .cgroup_dir_fd = launch_.leaf ? launch_.leaf->dir_fd() : -1,
      .status_write_fd = status_write_.get(),
      .terminal_fd = terminal != nullptr ? terminal->slave.get() : -1,
      .terminal_fds = terminal != nullptr ? terminal->operator_terminal.fds : 0U,
      .child_mask = launch_.launcher_mask != nullptr ? launch_.launcher_mask : &original_,
      .child_dispositions = launch_.launcher_dispositions,
      .child_main =
          [](void* raw) {
            auto* c = static_cast<ChildContext*>(raw);
            if (record_self_as_module(c->record_fd, c->record_prefix->data(),
                                      c->record_prefix->size()) != 0) {
              static constexpr auto kLine = step_failure_status_line(
                  exit_code_for(ErrorKind::StepFailed), LaunchStep::RunState,
                  "the module's process could not record itself in its run record");
              [[maybe_unused]] auto n = ::write(c->status_fd, kLine.data(), kLine.size);
              ::_exit(exit_code_for(ErrorKind::StepFailed));
            }
            c->launch->launcher(c->launch->launcher_context, c->status_fd);
          },
      .context = &context};
  child_ = spawn_launcher(request);
  status_write_.reset();
  container_.emplace(launch_.leaf, child_.pid, child_.pidfd.get());  // torn down from here on
  if (launch_.after_spawn) launch_.after_spawn(child_.pid);
  // (The child has recorded itself in `state_` already.)
  // The pty's foreground is the module's group (the child set it too, before its steps).
  if (terminal != nullptr) ::tcsetpgrp(terminal->slave.get(), child_.pid);
  if (launch_.timeout_seconds) {
    arm_timer(timer_fd_.get(), *launch_.timeout_seconds);
    timer_ = Timer::Timeout;
  }
}

void Supervision::begin_stop(int sig) {
  if (stopping_ || !verified_) {
    container_->kill_all();  // a second request, or the module has not been verified yet
    if (result_.stop_kill == RunResult::StopKill::None) {
      result_.stop_kill =
          stopping_ ? RunResult::StopKill::SecondRequest : RunResult::StopKill::BeforeVerified;
    }
    return;
  }
  stopping_ = true;
  container_->signal_all(sig);
  // A stopped or frozen module acts on the signal only once continued: it is, now, so that
  // --timeout ends it on time and not only --kill-after later.
  container_->resume();
  arm_timer(timer_fd_.get(), launch_.kill_after_seconds);
  timer_ = Timer::Grace;
}

// After the verification: the module's stop or exit, its exit status taken without reaping it
// (WNOWAIT: see exited_), and every other child reaped. Only orphans of the module reparented
// to this subreaper are other children; they would pile up as zombies.
void Supervision::on_child() {
  if (!verified_) return;  // the module's zombie is what the verification reads
  siginfo_t info{};
  // A stop is reported once (WSTOPPED alone takes that report and reaps nothing).
  if (!exited_ && ::waitid(P_PID, child_.pid, &info, WSTOPPED | WNOHANG) == 0 &&
      info.si_pid == child_.pid) {
    // Stopped, not ended: freeze the rest of it, and let the shell see its job stop (the
    // front stops itself). This process keeps its timers.
    container_->stop();
    if (launch_.terminal != nullptr) {
      const char message = front_message::kModuleStopped;
      ::send(launch_.terminal->control.get(), &message, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  }
  note_module_exit(WNOHANG);
  // The other zombies, one by one by pid: waitpid(-1) would reap the module's too. Once the
  // module is a zombie, waitid(P_ALL) may show it first each time: the rest are reaped at
  // the teardown, which follows.
  for (;;) {
    info = siginfo_t{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0) break;
    if (info.si_pid == 0 || info.si_pid == child_.pid) break;
    ::waitpid(info.si_pid, nullptr, WNOHANG);
  }
}

void Supervision::on_signal() {
  signalfd_siginfo info{};
  while (::read(signal_fd_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    if (info.ssi_signo == SIGCHLD) {
      on_child();
      continue;
    }
    if (info.ssi_signo == SIGCONT) {
      container_->resume();
      continue;
    }
    if (info.ssi_signo == SIGTTIN || info.ssi_signo == SIGTSTP) continue;  // see above
    if (result_.stop_signal == 0) result_.stop_signal = static_cast<int>(info.ssi_signo);
    begin_stop(info.ssi_signo == SIGHUP ? SIGTERM : static_cast<int>(info.ssi_signo));
  }
}

void Supervision::on_timer() {
  std::uint64_t expirations = 0;
  if (::read(timer_fd_.get(), &expirations, sizeof expirations) <= 0) return;
  if (timer_ == Timer::Timeout) {
    result_.timed_out = true;
    begin_stop(SIGTERM);
  } else if (timer_ == Timer::Grace) {
    container_->kill_all();
    if (result_.stop_kill == RunResult::StopKill::None)
      result_.stop_kill = RunResult::StopKill::AfterGrace;
    timer_ = Timer::None;
  }
}

// The front (on a terminal): its job was stopped or continued, or it is gone (SIGKILL): then
// the operator's terminal is given its settings back from here and the run is ended.
void Supervision::on_control() {
  char message = 0;
  ssize_t n = ::recv(control_fd_, &message, 1, MSG_DONTWAIT);
  if (n == 1) {
    if (message == front_message::kStopped) container_->stop();
    if (message == front_message::kContinued) container_->resume();
    return;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  control_fd_ = -1;
  SupervisorTerminal& terminal = *launch_.terminal;
  if (terminal.operator_settings) {
    ::tcsetattr(terminal.operator_terminal.settings_fd, TCSANOW, &*terminal.operator_settings);
  }
  container_->kill_all();
}

// The module's first process's exit, its status kept and the process left a zombie (WNOWAIT):
// `options` WNOHANG to look, 0 to wait for it.
void Supervision::note_module_exit(int options) {
  if (exited_) return;
  siginfo_t info{};
  for (;;) {
    if (::waitid(P_PID, child_.pid, &info, WEXITED | WNOWAIT | options) == 0) break;
    if (errno != EINTR) return;
  }
  if (info.si_pid != child_.pid) return;  // WNOHANG: still running
  exited_ = true;
  // As waitpid would have put it, for status_to_exit_code.
  module_wstatus_ =
      info.si_code == CLD_EXITED ? (info.si_status & 0xff) << 8 : (info.si_status & 0x7f);
}

// Once, at the teardown: the module's first process, killed with the rest, is reaped.
void Supervision::reap_module() {
  if (reaped_) return;
  ::kill(child_.pid, SIGKILL);  // still ours (unreaped): it cannot be another process
  int wstatus = 0;
  pid_t reaped = 0;
  while ((reaped = ::waitpid(child_.pid, &wstatus, 0)) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  if (!exited_ && reaped == child_.pid) {
    exited_ = true;
    module_wstatus_ = wstatus;
  }
}

// await-exec: the status channel, the launcher's failure, or "exec" and then end of file
// when the module's exec closed it (close-on-exec).
bool Supervision::await_exec() {
  StatusChannel channel_text;
  StatusChannelDescriptors sent;  // what the launcher sent: its seccomp listener, its mounts
  for (;;) {
    pollfd fds[] = {{status_read_.get(), POLLIN, 0},
                    {signal_fd_.get(), POLLIN, 0},
                    {timer_fd_.get(), POLLIN, 0},
                    {control_fd_, POLLIN, 0}};
    if (::poll(fds, 4, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents != 0) on_signal();
    if (fds[2].revents != 0) on_timer();
    if (fds[3].revents != 0) on_control();
    if (fds[0].revents != 0) {
      char buffer[512];
      ssize_t n = read_status_channel(status_read_.get(), buffer, sizeof buffer, sent);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (channel_text.text.size() < kMaxStatusBytes) {
        channel_text.text.append(buffer, static_cast<std::size_t>(n));
      }
    }
  }
  status_read_.reset();
  if (sent.listener.valid() && launch_.seccomp_listener != nullptr) {
    launch_.seccomp_listener->start(std::move(sent.listener));
  }
  if (sent.module_mounts.valid() && launch_.module_mounts != nullptr) {
    *launch_.module_mounts = std::move(sent.module_mounts);
  }
  if (sent.own_tmp.valid() && launch_.own_tmp != nullptr) {
    *launch_.own_tmp = std::move(sent.own_tmp);
  }

  if (auto failure = channel_text.failure()) {
    await_module_exit();
    result_.end = RunEnd::LauncherFailed;
    result_.exit_code = failure->first;
    result_.launcher_line = failure->second;
    return false;
  }
  if (!channel_text.exec_happened() && (result_.stop_signal != 0 || result_.timed_out)) {
    // Stopped (a stop signal, --timeout) while the launcher was still starting, so the
    // launcher was killed before its exec: the run ends as the stop says, not as a launcher
    // failure. 128+N for signal N, as a stopped module's run; 124 for the timeout.
    await_module_exit();
    status_to_exit_code(module_wstatus_, result_);
    result_.end = RunEnd::Signaled;
    result_.exit_code = result_.timed_out ? kExitTimedOut : 128 + result_.stop_signal;
    return false;
  }
  if (!channel_text.exec_happened()) {
    await_module_exit();
    result_.end = RunEnd::LauncherFailed;
    result_.exit_code = exit_code_for(ErrorKind::StepFailed);
    RunResult scratch;
    int code = status_to_exit_code(module_wstatus_, scratch);
    result_.launcher_line =
        "the launcher ended before the module's exec (" +
        (scratch.module_signal != 0 ? "signal " + std::to_string(scratch.module_signal)
                                    : "exit status " + std::to_string(code)) +
        ")";
    return false;
  }
  return true;
}

// verify: the exec happened (the module may even have exited already: a zombie keeps its
// status until it is reaped, which is done only after this).
bool Supervision::verify() {
  const ProcStatus status =
      parse_proc_status(read_text_file("/proc/" + std::to_string(child_.pid) + "/status"));
  if (auto problem = exec_verification_problem(status, launch_.expected)) {
    container_->kill_all();
    await_module_exit();
    result_.end = RunEnd::VerificationFailed;
    result_.exit_code = exit_code_for(ErrorKind::StepFailed);
    result_.verification_problem = *problem;
    return false;
  }
  verified_ = true;
  // A stop or exit whose SIGCHLD came before this point was left for now (the zombie was
  // still to be verified): look once, as waitpid still reports it.
  on_child();
  return true;
}

// wait: for the module, serving signals, the timeout and the grace period.
void Supervision::wait() {
  SeccompListener* listener = launch_.seccomp_listener;
  while (!exited_) {
    // The seccomp listener until its thread serves it (denial_listener.hpp: the thread starts
    // with the first refused call).
    pollfd fds[] = {{child_.pidfd.get(), POLLIN, 0},
                    {signal_fd_.get(), POLLIN, 0},
                    {timer_fd_.get(), POLLIN, 0},
                    {control_fd_, POLLIN, 0},
                    {listener != nullptr ? listener->waiting_fd() : -1, POLLIN, 0}};
    if (::poll(fds, 5, -1) < 0 && errno != EINTR) break;
    if (fds[4].revents != 0) listener->on_ready(fds[4].revents);
    if (fds[1].revents != 0) on_signal();
    if (fds[2].revents != 0) on_timer();
    if (fds[3].revents != 0) on_control();
    if (fds[0].revents != 0) on_child();  // the pidfd: the module exited
  }
  result_.exit_code = status_to_exit_code(module_wstatus_, result_);
  result_.end = result_.module_signal != 0 ? RunEnd::Signaled : RunEnd::Exited;
  if (result_.timed_out) result_.exit_code = kExitTimedOut;
}

// Attack review (session 15): a module that sends descriptors (a 200 MiB memfd, ptys) into a
// unix socket pair of its own, with both ends of the pair, and exits leaves a cycle no process
// holds: the memory and ptys outlived the run until something else on the node closed a unix
// socket and so ran the kernel's collector. Closing a pair of our own, once every process of
// the module is gone, runs it now (checked on 6.18: 100 MiB freed within 0.3 s).
void collect_unix_garbage() {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return;
  ::close(pair[0]);
  ::close(pair[1]);
}

// teardown: whatever the module left running dies with it. Once, on every path after spawn.
void Supervision::teardown() {
  if (torn_down_ || !container_) return;  // once; nothing to tear down before the spawn
  torn_down_ = true;
  if (launch_.seccomp_listener != nullptr) launch_.seccomp_listener->serve_waiting();
  if (launch_.leaf) {
    const std::string& leaf = launch_.leaf->path();
    // cgroup.events "populated 0": no process is left in the leaf (the module exited: its
    // zombie no longer counts there; a process that has exited cannot fork), so there is nothing
    // for cgroup.kill to kill or to wait for; the leaf is removed at once (remove_cgroup: rmdir,
    // else kill and retry). Anything else, an unreadable file too: killed and waited for, as
    // always.
    if (read_cgroup_key(leaf + "/cgroup.events", "populated").value_or(1) != 0) {
      container_->kill_all();
    }
    // No memory.events (its oom_kill line is there since Linux 4.13): no memory controller in
    // the leaf, so no memory.peak either.
    const auto oom_kills = read_cgroup_key(leaf + "/memory.events", "oom_kill");
    const bool memory = oom_kills.has_value();
    result_.oom_kills = oom_kills.value_or(0);
    result_.process_limit_hits = read_cgroup_key(leaf + "/pids.events", "max");
    if (launch_.usage) {
      result_.cpu_usec = read_cgroup_key(leaf + "/cpu.stat", "usage_usec");
      if (memory) result_.memory_peak_bytes = read_cgroup_number(leaf + "/memory.peak");
    }
    launch_.leaf->destroy();
  } else {
    signal_process_group(child_.pidfd.get(), child_.pid, SIGKILL);
  }
  kill_and_reap_children(child_.pid);
  if (launch_.seccomp_listener != nullptr) launch_.seccomp_listener->stop();
  // Every process of the module is gone, and its first one is a zombie still: its pid is not
  // free, so no other process (another module under the same module_user) can have it while
  // the audit reader stops (before_reap), then it is reaped.
  std::exception_ptr hook_failed;
  if (launch_.before_reap) {
    try {
      launch_.before_reap();
    } catch (...) {
      hook_failed = std::current_exception();
    }
  }
  reap_module();
  collect_unix_garbage();
  if (hook_failed) std::rethrow_exception(hook_failed);
  // A front stopped with its module is continued, to end with the run (a job the shell shows
  // as stopped until now, e.g. when --timeout ended the stopped module). kEnded first: the
  // front reads it before acting on a kModuleStopped it has not read yet.
  SupervisorTerminal* terminal = launch_.terminal;
  if (terminal != nullptr && control_fd_ >= 0 && ::getppid() == terminal->front) {
    const char message = front_message::kEnded;  // the front lives
    ::send(terminal->control.get(), &message, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    ::kill(terminal->front, SIGCONT);
  }
  result_.cgroup_container = launch_.leaf.has_value();
  result_.duration_seconds = std::chrono::duration<double>(Clock::now() - started_).count();
}

}  // namespace

RunResult supervise(SupervisedLaunch& launch, RunState& state) {
  Supervision run(launch, state);
  try {
    run.spawn();
    if (run.await_exec() && run.verify()) run.wait();
  } catch (...) {
    run.teardown();  // the container dies with the run, whatever failed in this process
    throw;
  }
  run.teardown();
  return run.result();
}

std::string run_result_to_json(const RunResult& r, const std::string& id,
                               const std::vector<std::string>& notes) {
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
      {"id", id},
      {"end", end},
      {"exit_code", r.exit_code},
      {"module_exit_status",
       r.module_status >= 0 ? nlohmann::json(r.module_status) : nlohmann::json(nullptr)},
      {"module_signal",
       r.module_signal != 0 ? nlohmann::json(r.module_signal) : nlohmann::json(nullptr)},
      {"timed_out", r.timed_out},
      {"stop_signal", r.stop_signal != 0 ? nlohmann::json(r.stop_signal) : nlohmann::json(nullptr)},
      {"oom_killed", r.oom_kills > 0},
      {"process_limit_hits", optional(r.process_limit_hits)},
      {"container", r.cgroup_container ? "cgroup" : "process-group"},
      {"launcher_error",
       r.launcher_line.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.launcher_line)},
      {"verification_error", r.verification_problem.empty()
                                 ? nlohmann::json(nullptr)
                                 : nlohmann::json(r.verification_problem)},
      {"cpu_usec", optional(r.cpu_usec)},
      {"memory_peak_bytes", optional(r.memory_peak_bytes)},
      {"duration_seconds", r.duration_seconds},
      {"notes", notes}};
  // A note can name a file the module named (quoted, but its bytes): never a throw here.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string not_started_result_json(const std::string& id, int exit_code,
                                    const std::string& error) {
  nlohmann::json j{{"id", id.empty() ? nlohmann::json(nullptr) : nlohmann::json(id)},
                   {"end", "not-started"},
                   {"exit_code", exit_code},
                   {"error", error}};
  return j.dump() + "\n";
}

}  // namespace oarbank
