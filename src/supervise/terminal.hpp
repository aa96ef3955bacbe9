// The operator's terminal and the module's pseudo-terminal (issue 10). A module never gets
// the operator's terminal: given it, a module could give it up (TIOCNOTTY) and read the
// operator's keystrokes from the background, leave TIOCEXCL on it, or turn off its echo. When
// any of sandbox-run's descriptors 0-2 is a terminal, the module gets a pty of its own instead
// (as sudo's use_pty, systemd-run --pty and docker run -t do), and the front
// (terminal_front.hpp) relays between the two.
#pragma once

#include <sys/types.h>
#include <termios.h>

#include <optional>
#include <utility>

#include "sys/unique_fd.hpp"

namespace oarbank {

struct OperatorTerminal {
  unsigned fds = 0;      // bit N set: descriptor N (0, 1 or 2) is a terminal
  int settings_fd = -1;  // the one whose settings and size the pty copies: 0, else 1, else 2
  // Where the module's output goes: 1, else 2, else 0 (a terminal opened for reading and
  // writing, as a login shell's are); -1 when no descriptor takes it.
  int output_fd = -1;
  [[nodiscard]] bool input() const { return (fds & 1U) != 0; }
};

// nullopt when none of 0, 1, 2 is a terminal: pipes and files get no pty.
std::optional<OperatorTerminal> find_operator_terminal();

struct PtyPair {
  UniqueFd master;  // the relay's side, close-on-exec
  UniqueFd slave;   // the module's side, close-on-exec (dup2 makes the module's copies)
};

// A new pty pair whose slave has the settings and window size of `settings_fd` (the module
// starts with the terminal the operator has). TIOCGPTPEER (Linux 4.13) opens the slave
// through the master, never by its path; older kernels open ptsname's path. Throws
// Error(StepFailed) naming the call. `devpts_fd`: the module's own devpts instance (issue 12,
// apply/module_mounts.hpp), whose ptmx opens the pair there, so that the module finds its
// terminal under its own /dev/pts (ttyname); -1: the node's (posix_openpt). `owner`: a uid of
// the module's own and its gid, given the slave (0600) in the module's own devpts: devpts makes
// it its opener's (root's), and the module could then not open its own /dev/pts/N by name;
// (uid_t)-1 leaves it root's (a shared uid, or the node's devpts: module_run.cpp).
PtyPair open_module_pty(int settings_fd, int devpts_fd = -1,
                        std::pair<uid_t, gid_t> owner = {static_cast<uid_t>(-1),
                                                         static_cast<gid_t>(-1)});

// TIOCGWINSZ of `from` to TIOCSWINSZ of `to` (the kernel sends SIGWINCH to the pty's
// foreground group when it changes).
void copy_window_size(int from, int to);

// The operator's side while relaying: no echo, no line editing, no signal characters (^C,
// ^Z reach the pty as bytes, whose own settings make them signals for the module), no
// input translation. Output processing (c_oflag) is kept: the pty already turned "\n" into
// "\r\n", a second pass changes nothing on screen, and sandbox-run's own lines on stderr
// still start at the left margin.
termios relay_settings(const termios& operator_settings);

}  // namespace oarbank
