#include "supervise/terminal_front.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <string>

#include "apply/descriptors.hpp"
#include "supervise/operator_lines.hpp"
#include "supervise/terminal_output_filter.hpp"
#include "sys/error.hpp"

namespace oarbank {
namespace {

// Bounded buffers: a module that never reads its pty, or floods it, costs the front this much
// and then only waits (the supervisor, another process, never waits on the relay at all).
constexpr std::size_t kBufferBytes = 16 * 1024;
// Written to the operator's terminal at most this much at a time. The front writes through a
// description of its own, non-blocking (output_fd below); where that cannot be opened, the
// shell's shared and blocking one: after POLLOUT a tty takes this much without waiting.
constexpr std::size_t kOutputChunk = 256;

// The operator's terminal opened again, O_NONBLOCK: setting O_NONBLOCK on the descriptor the
// front inherited would set it for the shell too (one open file description). -1 if none.
int output_fd(const OperatorTerminal& terminal) {
  if (terminal.output_fd < 0) return -1;
  const std::string path = "/proc/self/fd/" + std::to_string(terminal.output_fd);
  int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  return fd >= 0 ? fd : terminal.output_fd;
}

class ByteQueue {
 public:
  [[nodiscard]] bool empty() const { return begin_ == data_.size(); }
  [[nodiscard]] bool full() const { return data_.size() - begin_ >= kBufferBytes; }
  // Reads what fits from `fd`: the read's result.
  ssize_t fill_from(int fd) {
    if (begin_ == data_.size()) {
      data_.clear();
      begin_ = 0;
    }
    char buffer[4096];
    std::size_t room = kBufferBytes - (data_.size() - begin_);
    ssize_t n = ::read(fd, buffer, room < sizeof buffer ? room : sizeof buffer);
    if (n > 0 && filter_ != nullptr) {
      filter_->feed(std::string_view(buffer, static_cast<std::size_t>(n)), data_);
    } else if (n > 0) {
      data_.append(buffer, static_cast<std::size_t>(n));
    }
    return n;
  }
  // What is read passes through `filter` first (the module's output: terminal_output_filter).
  void filter_with(TerminalOutputFilter* filter) { filter_ = filter; }
  ssize_t drain_to(int fd, std::size_t most) {
    std::size_t size = data_.size() - begin_;
    ssize_t n = ::write(fd, data_.data() + begin_, size < most ? size : most);
    if (n > 0) {
      begin_ += static_cast<std::size_t>(n);
      last_ = data_[begin_ - 1];
    }
    return n;
  }
  // The last byte drain_to wrote.
  [[nodiscard]] char last() const { return last_; }
  void clear() {
    data_.clear();
    begin_ = 0;
  }

 private:
  std::string data_;
  std::size_t begin_ = 0;
  char last_ = '\n';
  TerminalOutputFilter* filter_ = nullptr;
};

class Front {
 public:
  Front(const OperatorTerminal& terminal, int master, int control, int signals, pid_t supervisor)
      : terminal_(terminal),
        master_(master),
        control_(control),
        signals_(signals),
        supervisor_(supervisor),
        output_(output_fd(terminal)),
        output_fd_ok_(output_ >= 0) {
    to_operator_.filter_with(&output_filter_);
  }

  [[noreturn]] void run() {
    enter();
    while (!supervisor_ended_) step(-1);
    // The module and the supervisor are gone, so no one holds the pty's slave: what the
    // module wrote last is still to be read, then read() says EIO.
    while (master_open_) {
      pollfd fd{master_, POLLIN, 0};
      if (::poll(&fd, 1, 1000) <= 0) break;
      if (!read_master()) break;
      flush_output_blocking();
    }
    flush_output_blocking();
    leave();
    ::_exit(exit_code_);
  }

 private:
  [[nodiscard]] bool foreground() const {
    return terminal_.input() && ::tcgetpgrp(0) == ::getpgrp();
  }

  // Started, or continued by the shell (fg, bg): in the foreground the operator's keystrokes
  // are the module's, relayed raw; in the background the terminal is left alone, and never
  // read (a background job does not get the operator's keystrokes).
  void enter() {
    input_paused_ = false;
    copy_window_size(terminal_.settings_fd, master_);
    if (!foreground() || raw_) return;
    if (::tcgetattr(0, &saved_) != 0) return;
    termios raw = relay_settings(saved_);
    raw_ = ::tcsetattr(0, TCSANOW, &raw) == 0;
  }
  // SIGTTOU is blocked: restoring from the background (after the shell took the terminal
  // back) is allowed, and TCSANOW never waits on output.
  void leave() {
    if (raw_) ::tcsetattr(0, TCSANOW, &saved_);
    raw_ = false;
  }
  void tell(char message) {
    if (control_ >= 0) ::send(control_, &message, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  // As a shell's job stops: the terminal as the shell gave it, then stopped, so the shell
  // that waits for this pid (WUNTRACED) takes its terminal back. SIGSTOP rather than
  // SIGTSTP: the kernel drops SIGTSTP in an orphaned process group (a front started by a
  // program that is not a shell).
  void stop_self() {
    flush_output_nonblocking();
    leave();
    ::kill(::getpid(), SIGSTOP);
  }
  // `stty tostop` on the operator's terminal: a background job that writes to it is stopped
  // (SIGTTOU). The front blocks SIGTTOU, which the kernel takes as leave to write, so it
  // stops itself instead, as that job would, and writes once continued in the foreground.
  // Only under a shell of this session (the parent, in another group of it): in an orphaned
  // group no one would continue it (the kernel answers EIO there), and it writes as before.
  [[nodiscard]] bool tostop_applies() const {
    const pid_t foreground = ::tcgetpgrp(output_);  // -1: not this session's terminal
    if (foreground <= 0 || foreground == ::getpgrp()) return false;
    const pid_t parent = ::getppid();
    if (::getsid(parent) != ::getsid(0) || ::getpgid(parent) == ::getpgrp()) return false;
    termios settings{};
    return ::tcgetattr(output_, &settings) == 0 && (settings.c_lflag & TOSTOP) != 0;
  }
  void stop_for_tostop() {
    tell(front_message::kStopped);
    leave();
    ::kill(::getpid(), SIGSTOP);
  }

  bool read_master() {
    ssize_t n = to_operator_.fill_from(master_);
    if (!output_fd_ok_) to_operator_.clear();  // nowhere to show it: dropped, never blocking
    if (n > 0) return true;
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    master_open_ = false;  // EIO: every slave descriptor is closed
    return false;
  }
  void flush_output_nonblocking() {
    if (output_fd_ok_ && !to_operator_.empty() && tostop_applies()) return;  // kept for later
    while (output_fd_ok_ && !to_operator_.empty()) {
      pollfd fd{output_, POLLOUT, 0};
      if (::poll(&fd, 1, 0) <= 0) return;
      write_output();
    }
  }
  void flush_output_blocking() {
    // Bounded: a terminal that takes nothing for a second gets no more.
    while (output_fd_ok_ && !to_operator_.empty()) {
      if (tostop_applies()) stop_for_tostop();  // the last lines too, once continued
      pollfd fd{output_, POLLOUT, 0};
      if (::poll(&fd, 1, 1000) <= 0) break;
      write_output();
    }
    to_operator_.clear();
  }
  void write_output() {
    if (!output_fd_ok_) {
      to_operator_.clear();
      return;
    }
    const ssize_t n = to_operator_.drain_to(output_, kOutputChunk);
    if (n > 0) mark_module_output_shown(to_operator_.last());  // operator_lines.hpp
    if (n < 0 && errno != EINTR && errno != EAGAIN) {
      output_fd_ok_ = false;  // hung up: what the module writes now goes nowhere
      to_operator_.clear();
    }
  }

  void on_signals() {
    signalfd_siginfo info{};
    while (::read(signals_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      const int sig = static_cast<int>(info.ssi_signo);
      switch (sig) {
        case SIGINT:
        case SIGTERM:
        case SIGHUP:
        case SIGQUIT:
          // What sandbox-run's pid is sent, the supervisor acts on, as it always did.
          ::kill(supervisor_, sig);
          break;
        case SIGWINCH:
          copy_window_size(terminal_.settings_fd, master_);
          break;
        case SIGTSTP:
        case SIGTTIN:
        case SIGTTOU:
          tell(front_message::kStopped);
          stop_self();
          break;
        case SIGCONT:
          enter();
          tell(front_message::kContinued);
          break;
        case SIGCHLD:
          reap();
          break;
        default:
          break;
      }
    }
  }
  void reap() {
    int status = 0;
    if (::waitpid(supervisor_, &status, WNOHANG) != supervisor_) return;
    supervisor_ended_ = true;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  void on_control() {
    char messages[64];
    ssize_t n = ::recv(control_, messages, sizeof messages, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      control_ = -1;  // the supervisor is ending; its exit comes as SIGCHLD
      return;
    }
    bool stop = false;
    for (ssize_t i = 0; i < n; ++i) {
      if (messages[i] == front_message::kModuleStopped) stop = !ended_;
      if (messages[i] == front_message::kEnded) {
        ended_ = true;
        stop = false;
      }
    }
    if (stop) stop_self();
  }

  void step(int timeout_ms) {
    if (output_fd_ok_ && !to_operator_.empty() && tostop_applies()) {
      stop_for_tostop();
      return;  // continued: the SIGCONT is read (and the terminal set up) on the next step
    }
    const bool read_input = foreground() && !input_paused_ && !input_ended_ && !to_module_.full();
    pollfd fds[5] = {{signals_, POLLIN, 0},
                     {control_, POLLIN, 0},
                     {master_open_ ? master_ : -1,
                      static_cast<short>((to_operator_.full() ? 0 : POLLIN) |
                                         (to_module_.empty() ? 0 : POLLOUT)),
                      0},
                     {read_input ? 0 : -1, POLLIN, 0},
                     {output_fd_ok_ && !to_operator_.empty() ? output_ : -1, POLLOUT, 0}};
    if (::poll(fds, 5, timeout_ms) < 0) return;
    if (fds[0].revents != 0) on_signals();
    if (fds[1].revents != 0) on_control();
    if ((fds[2].revents & POLLOUT) != 0) {
      if (to_module_.drain_to(master_, kBufferBytes) < 0 && errno != EAGAIN && errno != EINTR) {
        to_module_.clear();
      }
    }
    if ((fds[2].revents & (POLLIN | POLLHUP | POLLERR)) != 0) read_master();
    if (fds[3].revents != 0) {
      ssize_t n = to_module_.fill_from(0);
      if (n == 0) {
        // The operator's terminal hung up: the module's pty gets its end-of-file character.
        input_ended_ = true;
        termios pty{};
        if (::tcgetattr(master_, &pty) == 0 && (pty.c_lflag & ICANON) != 0) {
          const char eof = static_cast<char>(pty.c_cc[VEOF]);
          ::write(master_, &eof, 1);
        }
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        input_paused_ = true;  // EIO: moved to the background meanwhile; until continued
      }
    }
    if (fds[4].revents != 0) write_output();
  }

  const OperatorTerminal terminal_;
  const int master_;
  int control_;
  const int signals_;
  const pid_t supervisor_;
  const int output_;
  bool output_fd_ok_;
  termios saved_{};
  bool raw_ = false;
  bool master_open_ = true;
  bool input_paused_ = false;
  bool input_ended_ = false;
  bool supervisor_ended_ = false;
  bool ended_ = false;  // the supervisor said kEnded: no more stops
  int exit_code_ = 0;
  TerminalOutputFilter output_filter_;
  ByteQueue to_module_, to_operator_;
};

}  // namespace

SupervisorTerminal split_front(const OperatorTerminal& terminal, int devpts_fd,
                               std::pair<uid_t, gid_t> owner) {
  PtyPair pty = open_module_pty(terminal.settings_fd, devpts_fd, owner);
  SupervisorTerminal result;
  result.operator_terminal = terminal;
  if (terminal.input()) {
    termios settings{};
    if (::tcgetattr(0, &settings) == 0) result.operator_settings = settings;
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    throw Error(ErrorKind::StepFailed, "step terminal failed: socketpair: " + errno_text(errno));
  }
  UniqueFd front_end(pair[0]);
  UniqueFd supervisor_end(pair[1]);
  // The front's signals are blocked before the fork, so that none is lost or acts by default
  // in between; the supervisor returns to the mask it had.
  sigset_t front_signals, original;
  ::sigemptyset(&front_signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGTSTP, SIGTTIN, SIGTTOU, SIGCONT,
                  SIGCHLD, SIGPIPE}) {
    ::sigaddset(&front_signals, sig);
  }
  ::sigprocmask(SIG_BLOCK, &front_signals, &original);
  // Shared with the front: the supervisor's lines after the module's output reset the terminal.
  make_operator_line_marks();
  std::fflush(nullptr);
  const pid_t front = ::getpid();
  const pid_t supervisor = ::fork();
  if (supervisor < 0) {
    const int err = errno;
    ::sigprocmask(SIG_SETMASK, &original, nullptr);
    throw Error(ErrorKind::StepFailed, "step terminal failed: fork: " + errno_text(err));
  }
  if (supervisor > 0) {
    // The front. Nothing of the run is its to tear down (the supervisor's objects are copies
    // here): it leaves with _exit.
    pty.slave.reset();
    supervisor_end.reset();
    const int signals = ::signalfd(-1, &front_signals, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signals < 0 || ::fcntl(pty.master.get(), F_SETFL, O_NONBLOCK) != 0) {
      // Without its signals the front cannot relay: the supervisor sees the control socket
      // close and tears the run down.
      std::string line =
          "oarbank-agent sandbox-run: step terminal failed: signalfd: " + errno_text(errno) + "\n";
      [[maybe_unused]] auto n = ::write(2, line.data(), line.size());
      ::_exit(exit_code_for(ErrorKind::StepFailed));
    }
    // Nothing else of the run stays open here (the supervisor's leaf, the stock's set and its
    // devpts): the supervisor's close is then the last, as the stock's give-back relies on
    // (close_range, Linux 5.9: below the launcher's floor, Landlock ABI 3, Linux 6.2).
    close_all_but({pty.master.get(), front_end.get(), signals});
    Front(terminal, pty.master.get(), front_end.get(), signals, supervisor).run();
  }
  ::sigprocmask(SIG_SETMASK, &original, nullptr);
  pty.master.reset();
  front_end.reset();
  result.front = front;
  if (::setsid() < 0 || ::ioctl(pty.slave.get(), TIOCSCTTY, 0) != 0) {
    throw Error(
        ErrorKind::StepFailed,
        "step terminal failed: setsid or TIOCSCTTY of the module's pty: " + errno_text(errno));
  }
  result.slave = std::move(pty.slave);
  result.control = std::move(supervisor_end);
  return result;
}

}  // namespace oarbank
