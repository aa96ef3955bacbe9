#include "supervise/terminal.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "plan/launch_steps.hpp"
#include "sys/error.hpp"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)  // Linux 4.13
#endif

namespace oarbank {

std::optional<OperatorTerminal> find_operator_terminal() {
  OperatorTerminal t;
  for (int fd = 0; fd < 3; ++fd) {
    if (::isatty(fd) == 1) t.fds |= 1U << fd;
  }
  if (t.fds == 0) return std::nullopt;
  for (int fd : {0, 1, 2}) {
    if ((t.fds & (1U << fd)) != 0) {
      t.settings_fd = fd;
      break;
    }
  }
  for (int fd : {1, 2, 0}) {
    if ((t.fds & (1U << fd)) != 0 && (::fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDONLY) {
      t.output_fd = fd;
      break;
    }
  }
  return t;
}

PtyPair open_module_pty(int settings_fd, int devpts_fd, std::pair<uid_t, gid_t> owner) {
  PtyPair pair;
  pair.master.reset(devpts_fd >= 0 ? ::openat(devpts_fd, "ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
                                   : ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!pair.master.valid() || ::unlockpt(pair.master.get()) != 0) {
    throw step_error(LaunchStep::Terminal, "posix_openpt or unlockpt", errno);
  }
  pair.slave.reset(::ioctl(pair.master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!pair.slave.valid() && (errno == EINVAL || errno == ENOTTY)) {
    char name[128];
    if (::ptsname_r(pair.master.get(), name, sizeof name) == 0) {
      pair.slave.reset(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
    }
  }
  if (!pair.slave.valid()) {
    throw step_error(LaunchStep::Terminal, "opening the pty's slave", errno);
  }
  if (owner.first != static_cast<uid_t>(-1) &&
      (::fchown(pair.slave.get(), owner.first, owner.second) != 0 ||
       ::fchmod(pair.slave.get(), 0600) != 0)) {
    throw step_error(LaunchStep::Terminal,
                     "giving the pty's slave to uid " + std::to_string(owner.first), errno);
  }
  termios settings{};
  if (::tcgetattr(settings_fd, &settings) == 0) {
    ::tcsetattr(pair.slave.get(), TCSANOW, &settings);
  }
  copy_window_size(settings_fd, pair.slave.get());
  return pair;
}

void copy_window_size(int from, int to) {
  winsize size{};
  if (::ioctl(from, TIOCGWINSZ, &size) == 0) ::ioctl(to, TIOCSWINSZ, &size);
}

termios relay_settings(const termios& operator_settings) {
  termios raw = operator_settings;
  raw.c_iflag &= ~static_cast<tcflag_t>(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL |
                                        IXON | IXOFF);
  raw.c_lflag &= ~static_cast<tcflag_t>(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
  raw.c_cflag &= ~static_cast<tcflag_t>(CSIZE | PARENB);
  raw.c_cflag |= CS8;
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  return raw;
}

}  // namespace oarbank
