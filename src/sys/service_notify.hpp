// systemd's readiness protocol (sd_notify(3), without libsystemd): a service of Type=notify
// tells its manager it is ready by one datagram, "READY=1", to the unix socket named in
// $NOTIFY_SOCKET (a path, or an abstract name written with a leading '@').
#pragma once

namespace oarbank {

// Sends READY=1 where $NOTIFY_SOCKET names a socket; does nothing where it is unset (not
// started by systemd, or not as Type=notify). Returns 0, or the errno of a send that failed.
int notify_service_ready() noexcept;

}  // namespace oarbank
