#include "apply/seccomp_apply.hpp"

#include <linux/seccomp.h>
#include <sys/resource.h>
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

namespace {
constexpr unsigned long long kHeadroom = 1024;  // above the 253 of one message, with margin
}  // namespace

void ListenerSendHeadroom::raise() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_max == RLIM_INFINITY) return;
  soft_ = limit.rlim_cur;
  hard_ = limit.rlim_max;
  const rlimit raised{hard_ + kHeadroom, hard_ + kHeadroom};
  if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) {
    way_ = Way::Raised;
    return;
  }
  // EPERM: no CAP_SYS_RESOURCE, or above fs.nr_open.
  if (hard_ < 4 * kHeadroom) return;
  const rlimit at_hard{hard_, hard_};
  if (::setrlimit(RLIMIT_NOFILE, &at_hard) == 0) way_ = Way::ModuleLowered;
}

int ListenerSendHeadroom::restore() {
  rlimit module{soft_, hard_};
  if (way_ == Way::None) return 0;
  if (way_ == Way::ModuleLowered) {
    module.rlim_max = hard_ - kHeadroom;
    module.rlim_cur = soft_ < module.rlim_max ? soft_ : module.rlim_max;
  }
  return ::setrlimit(RLIMIT_NOFILE, &module) == 0 ? 0 : errno;
}

}  // namespace oarbank
