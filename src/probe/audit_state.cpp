#include "probe/audit_state.hpp"

#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "sys/unique_fd.hpp"

namespace oarbank {

bool seccomp_user_notif_available() {
  std::uint32_t action = SECCOMP_RET_USER_NOTIF;
  return ::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}

// AUDIT_GET's answer: the audit status (enabled: 0 off, 1 on, 2 on and locked; lost: records
// the kernel dropped since boot), or -errno.
int audit_status_of(int fd, audit_status& status) {
  struct {
    nlmsghdr header;
  } request{};
  request.header.nlmsg_len = sizeof request;
  request.header.nlmsg_type = AUDIT_GET;
  request.header.nlmsg_flags = NLM_F_REQUEST;
  request.header.nlmsg_seq = 1;
  if (::send(fd, &request, sizeof request, 0) < 0) return -errno;
  alignas(nlmsghdr) char buffer[8192];
  for (int tries = 0; tries < 4; ++tries) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < static_cast<ssize_t>(NLMSG_HDRLEN)) return n < 0 ? -errno : -EPROTO;
    const auto* header = reinterpret_cast<const nlmsghdr*>(buffer);
    if (header->nlmsg_type == NLMSG_ERROR) {
      const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(header));
      if (error->error != 0) return error->error;
      continue;
    }
    if (header->nlmsg_type == AUDIT_GET) {
      status = audit_status{};
      std::memcpy(&status, NLMSG_DATA(header),
                  std::min(sizeof status, static_cast<std::size_t>(n) - NLMSG_HDRLEN));
      return 0;
    }
  }
  return -EPROTO;
}

int audit_enabled_state() {
  if (::geteuid() != 0) return -1;
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT));
  if (!fd.valid()) return -1;
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) return -1;
  // A reply that never comes must not hang a probe: one second at most.
  timeval timeout{1, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  audit_status status{};
  if (audit_status_of(fd.get(), status) != 0) return -1;
  return static_cast<int>(status.enabled);
}

}  // namespace oarbank
