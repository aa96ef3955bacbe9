// Issue 14: what the kernel offers for naming a module's refusals (docs/denials.md): seccomp
// user notification, and the state of the kernel's audit (Landlock's records need it on).
#pragma once

#include <linux/audit.h>

namespace oarbank {

// SECCOMP_GET_ACTION_AVAIL for SECCOMP_RET_USER_NOTIF (Linux 5.0).
bool seccomp_user_notif_available();

// AUDIT_GET on a bound NETLINK_AUDIT socket `fd`: 0 and the status, or -errno (AUDIT_GET needs
// CAP_AUDIT_CONTROL).
int audit_status_of(int fd, audit_status& status);

// The kernel's audit state (0 off, 1 on, 2 locked on), or -1 when it cannot be asked (not root,
// no audit in the kernel).
int audit_enabled_state();

}  // namespace oarbank
