#pragma once

namespace oarbank {

// Gives up the controlling terminal, if the launcher has one and is not a session leader, so
// the module cannot push input into it (TIOCSTI needs the terminal to be the caller's
// controlling one, or CAP_SYS_ADMIN). The seccomp filter also refuses TIOCSTI and TIOCLINUX;
// this is the second wall. The process group stays, so Ctrl-C still reaches the module.
void detach_controlling_terminal();

}  // namespace oarbank
