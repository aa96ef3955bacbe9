// Issue 14: sandbox-run's reader of Landlock's audit records (docs/denials.md). It listens on
// NETLINK_AUDIT's read-only multicast group (AUDIT_NLGRP_READLOG: needs CAP_AUDIT_READ), opened
// before the module is spawned so that nothing it does is missed, and keeps this run's
// records (plan/landlock_denial.hpp) in the run's table. Audit itself is the node's: it is
// enabled only where the node's configuration says "enable" (denial_audit).
#pragma once

#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <string>
#include <thread>

#include "plan/landlock_denial.hpp"
#include "supervise/denial_table.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {

// Whether a datagram the reader received (recvfrom's address, `length` its size) was sent by
// the kernel: a netlink sender's port id is 0 only for the kernel. Another process with
// CAP_NET_ADMIN may send to the read-log group too (netlink's multicast send check), and what
// it sends must never become a run's denial, advice or --learn grant.
[[nodiscard]] inline bool audit_message_from_kernel(const sockaddr_nl& sender,
                                                    socklen_t length) noexcept {
  return length >= static_cast<socklen_t>(sizeof(sockaddr_nl)) && sender.nl_family == AF_NETLINK &&
         sender.nl_pid == 0;
}

class LandlockAuditReader {
 public:
  LandlockAuditReader(DenialTable& table, LandlockAdviceContext context)
      : table_(table), context_(std::move(context)) {}
  ~LandlockAuditReader() { stop(); }
  LandlockAuditReader(const LandlockAuditReader&) = delete;
  LandlockAuditReader& operator=(const LandlockAuditReader&) = delete;

  // Before the spawn: decides from the node's `mode` ("off", "if-enabled", "enable"), the
  // Landlock ABI the plan uses and the kernel's audit state whether the run's Landlock
  // denials can be read, and opens the socket. Returns "" when they can, else why not.
  std::string open(const std::string& mode, int landlock_abi);
  // After the spawn (the process is single-threaded until then): reads in a thread of its own.
  // maker_uid: the real uid the module's first process restricted itself with (the
  // launcher's: plan/landlock_denial.hpp).
  void start(pid_t module_pid, std::int64_t maker_uid) noexcept;
  // After the module's processes are gone: waits until the kernel's audit queue is empty
  // (500 ms at most), reads what is left in the socket, then stops.
  void stop();
  [[nodiscard]] bool opened() const { return socket_.valid(); }
  [[nodiscard]] std::uint64_t lost() const { return lost_; }
  // Whether the last drain stopped at its deadline with records still unread (a flood).
  [[nodiscard]] bool cut_short() const { return cut_short_; }
  // After stop(): whether the run's Landlock domain was identified (plan/landlock_denial.hpp).
  [[nodiscard]] bool domain_seen() const { return domain_seen_; }
  // Records the kernel dropped node-wide while the run was read (audit's "lost" counter: the
  // backlog of a node without auditd is small), and that backlog's limit.
  [[nodiscard]] std::uint64_t kernel_lost() const { return kernel_lost_; }
  [[nodiscard]] std::uint32_t backlog_limit() const { return backlog_limit_; }

 private:
  void serve(pid_t module_pid, std::int64_t maker_uid);
  void await_kernel_queue();

  DenialTable& table_;
  LandlockAdviceContext context_;
  UniqueFd socket_;
  UniqueFd control_;
  std::uint32_t lost_before_ = 0;
  std::uint32_t backlog_limit_ = 0;
  std::uint64_t kernel_lost_ = 0;
  UniqueFd stop_event_;
  std::thread thread_;
  std::uint64_t lost_ = 0;  // ENOBUFS: the socket's buffer overflowed
  bool cut_short_ = false;
  bool domain_seen_ = false;
};

}  // namespace oarbank
