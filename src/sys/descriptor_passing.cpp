#include "sys/descriptor_passing.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace oarbank {

int send_with_descriptors(int socket, std::string_view bytes, std::span<const int> fds,
                          const sockaddr_un* to, int flags) noexcept {
  if (fds.size() > kMaxPassedDescriptors) return E2BIG;
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedDescriptors)] = {};
  msghdr message{};
  if (to != nullptr) {
    message.msg_name = const_cast<sockaddr_un*>(to);
    message.msg_namelen = sizeof *to;
  }
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  if (!fds.empty()) {
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * fds.size());
  }
  const ssize_t sent = ::sendmsg(socket, &message, MSG_NOSIGNAL | flags);
  if (sent == static_cast<ssize_t>(bytes.size())) return 0;
  return sent < 0 ? errno : EIO;
}

ssize_t receive_with_descriptors(int socket, char* buffer, std::size_t size,
                                 std::vector<UniqueFd>& fds, int flags, ucred* sender) {
  if (sender != nullptr) *sender = ucred{0, static_cast<uid_t>(-1), static_cast<gid_t>(-1)};
  iovec iov{buffer, size};
  alignas(cmsghdr) char
      control[CMSG_SPACE(sizeof(int) * kMaxPassedDescriptors) + CMSG_SPACE(sizeof(ucred))] = {};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  const ssize_t n = ::recvmsg(socket, &message, flags | MSG_CMSG_CLOEXEC);
  if (n < 0) return n;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET) continue;
    if (header->cmsg_type == SCM_CREDENTIALS && sender != nullptr) {
      std::memcpy(sender, CMSG_DATA(header), sizeof *sender);
      continue;
    }
    if (header->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int received = -1;
      std::memcpy(&received, CMSG_DATA(header) + i * sizeof(int), sizeof(int));
      fds.emplace_back(received);
    }
  }
  return n;
}

}  // namespace oarbank
