#pragma once

#include "plan/seccomp_rules.hpp"

namespace oarbank {

// Loads the variant's program, compiled at build time. Needs no_new_privs. Returns 0 or errno.
// With listener_channel_fd >= 0 (sandbox-run's status channel, a unix socket): the variant's
// notifying program, loaded with a listener that is sent over that channel (docs/denials.md);
// a failure to send it is a failure of the step, as a failure to load is.
int load_seccomp_filter(const seccomp::FilterVariant& variant, int listener_channel_fd = -1);

// What load_seccomp_filter's send of the listener needs (session 19's attack review). It goes
// with SCM_RIGHTS as the module user, and the kernel refuses every SCM_RIGHTS send
// (ETOOMANYREFS, Linux 4.5) while the sender's user has more descriptors in flight than the
// sender's RLIMIT_NOFILE: another module of the shared module user, holding descriptors in
// flight up to its own limit, kept every later run of that user from starting. Each process of
// that user can bring the count to at most its hard limit plus one message's 253 descriptors,
// so the send needs a limit 1024 above the hard limit every module has. The launcher, while it
// is still root, raises its own to that and puts it back after the send, before the exec: the
// module inherits the limit it always had. Where root may not raise a hard limit (no
// CAP_SYS_RESOURCE in its bounding set, as in some containers, or above fs.nr_open), it sends
// at the hard limit H and hands the module H - 1024 instead (H of 4096 or more; below that
// nothing changes, and the shared user's runs can still be stopped this way: --id avoids it).
class ListenerSendHeadroom {
 public:
  void raise();   // as root, before the identity step
  int restore();  // after the send; 0 or errno
 private:
  enum class Way { None, Raised, ModuleLowered };
  Way way_ = Way::None;
  unsigned long long soft_ = 0;  // the module's limits, as inherited
  unsigned long long hard_ = 0;
};

}  // namespace oarbank
