#include "apply/seccomp_apply.hpp"

#include <linux/seccomp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "apply/seccomp_programs.hpp"
#include "sys/descriptor_passing.hpp"

namespace oarbank {
namespace {

// The listener, with one byte line ("listener\n") to carry it, over the status channel (a unix
// stream socket under sandbox-run): SCM_RIGHTS keeps the descriptor alive in the socket after
// this process closes its copy at the exec (the kernel makes it close-on-exec).
int send_listener(int channel_fd, int listener_fd) {
  return send_with_descriptor(channel_fd, "listener\n", listener_fd);
}

}  // namespace

int load_seccomp_filter(const seccomp::FilterVariant& variant, int listener_channel_fd) {
  const bool notify = listener_channel_fd >= 0;
  const auto& program = (notify ? seccomp::kNotifyPrograms : seccomp::kPrograms)[variant.index()];
  sock_fprog fprog{static_cast<unsigned short>(program.length),
                   const_cast<sock_filter*>(program.instructions)};
  // The launcher is single-threaded at this point, so no SECCOMP_FILTER_FLAG_TSYNC is needed.
  if (!notify) return ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) == 0 ? 0 : errno;
  // SECCOMP_FILTER_FLAG_NEW_LISTENER (Linux 5.0) returns the listener. EBUSY: a filter this
  // process already runs under has one (a task's filters may hold one listener in all).
  const long listener =
      ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog);
  if (listener < 0) return errno;
  const int err = send_listener(listener_channel_fd, static_cast<int>(listener));
  ::close(static_cast<int>(listener));
  return err;
}

}  // namespace oarbank
