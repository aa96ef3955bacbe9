// Whose is a connection to a module's own proxy port? Without a network namespace of its own
// (sandbox-run unprivileged, accept_port_only_egress), a module's proxy port listens where any
// local process can connect, and would be judged by that module's allowlist and logged under
// its id. So the proxy admits only connections made by the module's own processes: the
// connecting socket is found with sock_diag (the kernel's socket lookup by address and port),
// and it must be open in a process of the module's cgroup leaf (or process group).
// SO_PEERCRED cannot say: it answers for unix sockets only.
#pragma once

#include <sys/types.h>

#include <string>

namespace oarbank {

struct ModuleProcesses {
  std::string cgroup;       // the module's leaf (a directory under the cgroup2 mount), or ""
  pid_t process_group = 0;  // used when there is no leaf
};

// "" when the TCP peer of `accepted_fd` (a connection accepted in this network namespace) is
// a socket open in one of the module's processes; otherwise why it is refused, in words.
std::string peer_outside_module(int accepted_fd, const ModuleProcesses& module);

}  // namespace oarbank
