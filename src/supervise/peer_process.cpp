#include "supervise/peer_process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <vector>

#include "supervise/cgroup_leaf.hpp"
#include "sys/error.hpp"
#include "sys/text_file.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {
namespace {

void copy_address(const sockaddr_storage& address, __be16& port, __be32 (&words)[4]) {
  if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    port = v6.sin6_port;
    std::memcpy(words, &v6.sin6_addr, sizeof v6.sin6_addr);
  } else {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    port = v4.sin_port;
    words[0] = v4.sin_addr.s_addr;
  }
}

// The accepted socket's own address and its peer's.
bool endpoints(int fd, sockaddr_storage& local, sockaddr_storage& peer, std::string& problem) {
  socklen_t local_length = sizeof local;
  socklen_t peer_length = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) != 0) {
    problem = "getsockname/getpeername: " + errno_text(errno);
    return false;
  }
  return true;
}

// The inode of the connecting socket: an exact sock_diag lookup (Linux 3.3) of the TCP socket
// whose own address is the peer's and whose peer is us. Unprivileged callers may ask.
std::optional<ino_t> peer_socket_inode(int fd, std::string& problem) {
  sockaddr_storage local{};
  sockaddr_storage peer{};
  if (!endpoints(fd, local, peer, problem)) return std::nullopt;
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } message{};
  message.header.nlmsg_len = sizeof message;
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;
  message.request.sdiag_family = static_cast<__u8>(peer.ss_family);
  message.request.sdiag_protocol = IPPROTO_TCP;
  message.request.idiag_states = ~0U;
  copy_address(peer, message.request.id.idiag_sport, message.request.id.idiag_src);
  copy_address(local, message.request.id.idiag_dport, message.request.id.idiag_dst);
  message.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  message.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  UniqueFd diag(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!diag.valid()) {
    problem = "socket(NETLINK_SOCK_DIAG): " + errno_text(errno);
    return std::nullopt;
  }
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(diag.get(), &message, sizeof message, 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) != static_cast<ssize_t>(sizeof message)) {
    problem = "sock_diag request: " + errno_text(errno);
    return std::nullopt;
  }
  alignas(nlmsghdr) char buffer[8192];
  const ssize_t n = ::recv(diag.get(), buffer, sizeof buffer, 0);
  if (n < 0) {
    problem = "sock_diag answer: " + errno_text(errno);
    return std::nullopt;
  }
  int length = static_cast<int>(n);
  for (auto* header = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(header, length);
       header = NLMSG_NEXT(header, length)) {
    if (header->nlmsg_type == NLMSG_ERROR) {
      const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(header));
      // ENOENT: no such socket here; it is in another network namespace, or closed already.
      problem =
          "the connecting socket was not found (sock_diag: " + errno_text(-error->error) + ")";
      return std::nullopt;
    }
    if (header->nlmsg_type == SOCK_DIAG_BY_FAMILY) {
      return static_cast<const inet_diag_msg*>(NLMSG_DATA(header))->idiag_inode;
    }
  }
  problem = "sock_diag gave no answer";
  return std::nullopt;
}

// The same lookup through /proc/net/tcp or tcp6, for a kernel whose sock_diag has no TCP
// handler (inet_diag and tcp_diag are modules, CONFIG_INET_DIAG=m in Debian's kernels, and a
// node without loadable modules answers every query ENOENT). The kernel prints each address
// as the 32-bit words it holds (%08X, network order read as a host integer) and the port in
// host order: the line whose local address is the peer's and whose remote address is ours.
std::optional<ino_t> peer_socket_inode_from_proc(int fd, std::string& problem) {
  sockaddr_storage local{};
  sockaddr_storage peer{};
  if (!endpoints(fd, local, peer, problem)) return std::nullopt;
  const bool v6 = peer.ss_family == AF_INET6;
  auto text = [v6](const sockaddr_storage& address) {
    __be16 port = 0;
    __be32 words[4] = {};
    copy_address(address, port, words);
    char out[48];
    if (v6) {
      std::snprintf(out, sizeof out, "%08X%08X%08X%08X:%04X", words[0], words[1], words[2],
                    words[3], ntohs(port));
    } else {
      std::snprintf(out, sizeof out, "%08X:%04X", words[0], ntohs(port));
    }
    return std::string(out);
  };
  const std::string want_local = text(peer);
  const std::string want_remote = text(local);
  std::istringstream table(read_text_file(v6 ? "/proc/net/tcp6" : "/proc/net/tcp"));
  std::string line;
  std::getline(table, line);  // the header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local_address, remote_address, state, queues, timer, retransmits, uid,
        timeout;
    unsigned long long inode = 0;
    if (!(fields >> slot >> local_address >> remote_address >> state >> queues >> timer >>
          retransmits >> uid >> timeout >> inode)) {
      continue;
    }
    if (local_address == want_local && remote_address == want_remote) {
      return static_cast<ino_t>(inode);
    }
  }
  problem = "the connecting socket was not found (sock_diag and /proc/net/tcp)";
  return std::nullopt;
}

std::vector<pid_t> group_members(pid_t group) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    const std::string stat = read_text_file("/proc/" + std::string(entry->d_name) + "/stat");
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses; the last ')'
    // ends it.
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    int pgrp = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 &&
        pgrp == group) {
      out.push_back(static_cast<pid_t>(pid));
    }
  }
  ::closedir(proc);
  return out;
}

bool process_holds(pid_t pid, const std::string& link) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* fds = ::opendir(dir.c_str());
  if (fds == nullptr) return false;
  bool found = false;
  char target[64];
  while (dirent* entry = ::readdir(fds)) {
    if (entry->d_name[0] == '.') continue;
    const ssize_t n = ::readlinkat(::dirfd(fds), entry->d_name, target, sizeof target);
    if (n > 0 && static_cast<std::size_t>(n) == link.size() &&
        std::memcmp(target, link.data(), link.size()) == 0) {
      found = true;
      break;
    }
  }
  ::closedir(fds);
  return found;
}

}  // namespace

std::string peer_outside_module(int accepted_fd, const ModuleProcesses& module) {
  std::string problem;
  auto inode = peer_socket_inode(accepted_fd, problem);
  if (!inode) inode = peer_socket_inode_from_proc(accepted_fd, problem);
  if (!inode) return problem;
  const std::string link = "socket:[" + std::to_string(*inode) + "]";
  const std::vector<int> pids = !module.cgroup.empty()     ? read_cgroup_pids(module.cgroup)
                                : module.process_group > 0 ? group_members(module.process_group)
                                                           : std::vector<int>{};
  for (int pid : pids) {
    if (process_holds(pid, link)) return "";
  }
  return "the connection was not made by one of the module's processes";
}

}  // namespace oarbank
