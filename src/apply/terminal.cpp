#include "apply/terminal.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

namespace oarbank {

void detach_controlling_terminal() {
  // ENXIO: no controlling terminal, nothing to do.
  int tty = ::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (tty < 0) return;
  // A session leader's TIOCNOTTY would hang up the whole foreground job; it keeps the
  // terminal and relies on the seccomp refusal alone.
  if (::getsid(0) != ::getpid()) ::ioctl(tty, TIOCNOTTY);
  ::close(tty);
}

}  // namespace oarbank
