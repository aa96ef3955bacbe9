#include "sys/descriptor_passing.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace oarbank {

int send_with_descriptor(int socket, std::string_view bytes, int fd) noexcept {
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(header), &fd, sizeof(int));
  const ssize_t sent = ::sendmsg(socket, &message, MSG_NOSIGNAL);
  if (sent == static_cast<ssize_t>(bytes.size())) return 0;
  return sent < 0 ? errno : EIO;
}

}  // namespace oarbank
