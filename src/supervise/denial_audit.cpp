#include "supervise/denial_audit.hpp"

#include <linux/audit.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "probe/audit_state.hpp"
#include "sys/error.hpp"

namespace oarbank {
namespace {

// Datagrams read before the reader looks at its stop event again, and how long its last drain
// may take (the module's own records arrived before the stop: stop() waits for the kernel's
// queue to empty first).
constexpr int kDrainBatch = 256;
constexpr auto kLastDrain = std::chrono::milliseconds(500);

// AUDIT_SET enabled=1: the node's configuration asked for it ("enable").
int enable_audit(int fd) {
  struct {
    nlmsghdr header;
    audit_status status;
  } request{};
  request.header.nlmsg_len = sizeof request;
  request.header.nlmsg_type = AUDIT_SET;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  request.header.nlmsg_seq = 2;
  request.status.mask = AUDIT_STATUS_ENABLED;
  request.status.enabled = 1;
  if (::send(fd, &request, sizeof request, 0) < 0) return errno;
  alignas(nlmsghdr) char buffer[8192];
  const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
  if (n < 0) return errno;
  const auto* header = reinterpret_cast<const nlmsghdr*>(buffer);
  if (header->nlmsg_type == NLMSG_ERROR) {
    return -static_cast<const nlmsgerr*>(NLMSG_DATA(header))->error;
  }
  return 0;
}

}  // namespace

std::string LandlockAuditReader::open(const std::string& mode, int landlock_abi) {
  if (mode == "off") return "the node's configuration says denial_audit: off";
  if (landlock_abi < 7) {
    return "Landlock ABI " + std::to_string(landlock_abi) +
           " < 7 (Linux 6.15) writes no audit records";
  }
  // The control socket: the audit state, and enabling it where the node says so.
  UniqueFd control(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT));
  if (!control.valid())
    return "no audit in this kernel (socket(NETLINK_AUDIT): " + errno_text(errno) + ")";
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (::bind(control.get(), reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    return "bind(NETLINK_AUDIT): " + errno_text(errno);
  }
  audit_status status{};
  if (int err = audit_status_of(control.get(), status); err < 0) {
    return "the audit state cannot be read (AUDIT_GET: " + errno_text(-err) + ")";
  }
  // Session 18's attack review: a module refused in a loop writes audit records as fast as
  // it can; past the backlog (or the rate limit) the kernel calls audit_log_lost, which under
  // AUDIT_FAIL_PANIC panics the node. Not asked for there.
  if (status.failure == AUDIT_FAIL_PANIC) {
    return "the node's audit failure mode is panic (auditctl -f 2): a module refused in a loop "
           "could overflow the audit backlog and panic the node, so no Landlock refusal is "
           "logged for it";
  }
  if (status.enabled == 0) {
    if (mode != "enable") {
      return "audit is disabled on this node (the node's denial_audit: \"enable\" turns it on)";
    }
    if (int err = enable_audit(control.get()); err != 0) {
      return "audit is disabled, and enabling it failed (AUDIT_SET: " + errno_text(err) + ")";
    }
  }
  // The read-only multicast group: every record the kernel logs, whoever else reads them.
  UniqueFd reader(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_AUDIT));
  if (!reader.valid()) return "socket(NETLINK_AUDIT): " + errno_text(errno);
  sockaddr_nl group{};
  group.nl_family = AF_NETLINK;
  group.nl_groups = 1U << (AUDIT_NLGRP_READLOG - 1);
  if (::bind(reader.get(), reinterpret_cast<sockaddr*>(&group), sizeof group) != 0) {
    return "the audit log cannot be read (bind AUDIT_NLGRP_READLOG: " + errno_text(errno) +
           "; needs CAP_AUDIT_READ)";
  }
  // A busy node logs for every module: room for bursts (root may go past rmem_max).
  const int bytes = 4 << 20;
  if (::setsockopt(reader.get(), SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0) {
    ::setsockopt(reader.get(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  }
  socket_ = std::move(reader);
  lost_before_ = status.lost;
  backlog_limit_ = status.backlog_limit;
  control_ = std::move(control);
  return "";
}

void LandlockAuditReader::start(pid_t module_pid, std::int64_t maker_uid) noexcept {
  if (!socket_.valid()) return;
  stop_event_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop_event_.valid()) return;
  try {
    thread_ = std::thread([this, module_pid, maker_uid] { serve(module_pid, maker_uid); });
  } catch (...) {
  }
}

void LandlockAuditReader::stop() {
  if (!thread_.joinable()) return;
  await_kernel_queue();
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(stop_event_.get(), &one, sizeof one);
  thread_.join();
  audit_status status{};
  if (control_.valid() && audit_status_of(control_.get(), status) == 0 &&
      status.lost > lost_before_) {
    kernel_lost_ = status.lost - lost_before_;
  }
}

// Called once the module's processes are gone, so every record of theirs has been queued:
// Landlock logs in the refused call itself (audit_log_end puts the record on the kernel's
// audit_queue). kauditd sends each record to the read-log group as it takes it off that queue,
// so once AUDIT_GET reports an empty queue ("backlog" is that queue's length), this run's
// records are in the reader's socket, bar one kauditd may have taken off and not yet sent (a
// few microseconds): the reader drains the socket after this returns. Before, the reader waited
// for 50 ms without a record, on every run of an audited node: 50 ms on each module's exit.
void LandlockAuditReader::await_kernel_queue() {
  if (!control_.valid()) return;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  for (;;) {
    audit_status status{};
    if (audit_status_of(control_.get(), status) != 0 || status.backlog == 0) return;
    if (std::chrono::steady_clock::now() >= give_up) return;
    timespec pause{0, 200'000};
    ::nanosleep(&pause, nullptr);
  }
}

void LandlockAuditReader::serve(pid_t module_pid, std::int64_t maker_uid) {
  LandlockAuditEvents events(module_pid, context_, maker_uid);
  alignas(nlmsghdr) static thread_local char buffer[1 << 16];
  bool stopping = false;
  std::chrono::steady_clock::time_point stop_deadline;
  while (!stopping) {
    pollfd fds[] = {{socket_.get(), POLLIN, 0}, {stop_event_.get(), POLLIN, 0}};
    const int ready = ::poll(fds, 2, -1);
    if (ready < 0 && errno != EINTR) break;
    // Asked to stop (stop() saw the kernel's queue empty): what is in the socket is the rest.
    if (fds[1].revents != 0) {
      stopping = true;
      stop_deadline = std::chrono::steady_clock::now() + kLastDrain;
    }
    if (fds[0].revents == 0 && !stopping) continue;
    // Session 20's attack review: every reader on the node gets every module's records, and a
    // flood of another module's never lets the socket run dry. The drain goes back to poll after
    // a batch, so that a stop is seen; the last drain ends at its deadline, and what it leaves
    // unread is counted as lost (the result says so).
    for (int datagrams = 1;; ++datagrams) {
      if (datagrams % kDrainBatch == 0) {
        if (!stopping) break;
        if (std::chrono::steady_clock::now() > stop_deadline) {
          cut_short_ = true;
          break;
        }
      }
      sockaddr_nl sender{};
      socklen_t sender_length = sizeof sender;
      const ssize_t n = ::recvfrom(socket_.get(), buffer, sizeof buffer, MSG_DONTWAIT,
                                   reinterpret_cast<sockaddr*>(&sender), &sender_length);
      if (n < 0) {
        if (errno == ENOBUFS) {
          ++lost_;
          continue;
        }
        break;
      }
      if (!audit_message_from_kernel(sender, sender_length)) continue;  // a process's: dropped
      // One datagram may hold several messages, each aligned to 4 bytes.
      for (std::size_t offset = 0; offset + NLMSG_HDRLEN <= static_cast<std::size_t>(n);) {
        const auto* header = reinterpret_cast<const nlmsghdr*>(buffer + offset);
        if (header->nlmsg_len < NLMSG_HDRLEN ||
            offset + header->nlmsg_len > static_cast<std::size_t>(n)) {
          break;
        }
        offset += NLMSG_ALIGN(header->nlmsg_len);
        const char* text = buffer + (reinterpret_cast<const char*>(header) - buffer) + NLMSG_HDRLEN;
        // Only what a Landlock event is made of is parsed: the node's other records (logins,
        // other rules' SYSCALL and PROCTITLE) are the bulk of a busy audit log.
        if (header->nlmsg_type != kAuditLandlockAccess &&
            header->nlmsg_type != kAuditLandlockDomain && header->nlmsg_type != kAuditSyscall &&
            header->nlmsg_type != kAuditEndOfEvent) {
          continue;
        }
        std::size_t length = header->nlmsg_len - NLMSG_HDRLEN;
        while (length > 0 && (text[length - 1] == '\0' || text[length - 1] == '\n')) --length;
        auto record = parse_audit_record(header->nlmsg_type, std::string_view(text, length));
        if (!record) continue;
        for (const auto& denial : events.feed(*record)) table_.add(denial);
      }
    }
  }
  for (const auto& denial : events.flush()) table_.add(denial);
  domain_seen_ = events.domain_seen();
}

}  // namespace oarbank
