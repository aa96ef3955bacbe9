// sandbox-run on a terminal is two processes (issue 10). A shell waits (WUNTRACED) for
// sandbox-run's pid and shows "Stopped" only when that pid stops; but a stopped process
// services no timers, and --timeout must end a stopped module on time. So:
//
// - the front is the process the shell started (its pid, its job, its exit status). It holds
//   the operator's terminal and relays it to and from the module's pty; it forwards SIGINT,
//   SIGTERM, SIGHUP and SIGQUIT to the supervisor, and it stops itself when the module stops
//   (and asks the supervisor to freeze the module when it is stopped itself, ^Z or SIGTSTP);
// - the supervisor is its child, in a session of its own with the module's pty as its
//   controlling terminal, where no job-control signal of the operator's terminal reaches it.
//   It runs everything else (supervisor.cpp) and spawns the module in a process group of that
//   session: a group with a parent in the same session is not orphaned, so ^Z typed into the
//   pty stops the module as it would a shell's job.
//
// One byte at a time on a socket pair between the two:
#pragma once

#include <sys/types.h>
#include <termios.h>

#include <optional>

#include "supervise/terminal.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {

namespace front_message {
constexpr char kModuleStopped = 'S';  // supervisor to front: the module stopped; stop too
constexpr char kStopped = 'Z';        // front to supervisor: the front was stopped; freeze
constexpr char kContinued = 'C';      // front to supervisor: the front was continued; thaw
// Supervisor to front, at the end, before a SIGCONT that ends a front stopped meanwhile: a
// kModuleStopped still unread before it is void (the front must not stop after that SIGCONT).
constexpr char kEnded = 'E';
}  // namespace front_message

// What the supervisor keeps of the split.
struct SupervisorTerminal {
  OperatorTerminal operator_terminal;
  // The operator's settings when sandbox-run started: restored by the supervisor when the
  // front dies without restoring them itself (SIGKILL).
  std::optional<termios> operator_settings;
  UniqueFd slave;    // the module's terminal; this process's controlling terminal
  UniqueFd control;  // the socket to the front
  pid_t front = -1;
};

// Opens the module's pty and forks. In the parent, the front, it relays until the supervisor
// exits and then exits with its status (128+N when signal N ended it): it never returns. In
// the child, the supervisor, it returns once the child leads a session of its own with the
// pty as its controlling terminal. Throws Error(StepFailed) before the fork, or in the child.
// `devpts_fd`, `owner`: where the pty is made and whose its slave is (open_module_pty).
SupervisorTerminal split_front(const OperatorTerminal& terminal, int devpts_fd,
                               std::pair<uid_t, gid_t> owner);

}  // namespace oarbank
