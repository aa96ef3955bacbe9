#include "sys/service_notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace oarbank {

int notify_service_ready() noexcept {
  const char* name = std::getenv("NOTIFY_SOCKET");
  if (name == nullptr || name[0] == '\0') return 0;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::size_t length = std::strlen(name);
  if ((name[0] != '/' && name[0] != '@') || length >= sizeof address.sun_path) return EINVAL;
  std::memcpy(address.sun_path, name, length);
  if (name[0] == '@') address.sun_path[0] = '\0';  // an abstract name
  const int sock = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return errno;
  static constexpr char kReady[] = "READY=1";
  const auto size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length);
  const ssize_t sent = ::sendto(sock, kReady, sizeof kReady - 1, MSG_NOSIGNAL,
                                reinterpret_cast<const sockaddr*>(&address), size);
  const int err = sent < 0 ? errno : 0;
  ::close(sock);
  return err;
}

}  // namespace oarbank
