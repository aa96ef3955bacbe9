// Landlock's refusals as the kernel's audit log records them (ABI 7, Linux 6.15; docs/denials.md):
// the records parsed, tied to one run by its domain, and named with the policy element that
// would allow each. Pure: supervise/denial_audit.cpp reads the records from NETLINK_AUDIT.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plan/denials.hpp"

namespace oarbank {

inline constexpr int kAuditSyscall = 1300;         // AUDIT_SYSCALL
inline constexpr int kAuditEndOfEvent = 1320;      // AUDIT_EOE
inline constexpr int kAuditLandlockAccess = 1423;  // AUDIT_LANDLOCK_ACCESS
inline constexpr int kAuditLandlockDomain = 1424;  // AUDIT_LANDLOCK_DOMAIN

// One record: "audit(SECONDS.MS:SERIAL): key=value key="quoted value" ...". Unquoted values of
// path, exe and comm that are all hexadecimal are decoded (audit's form for unusual names).
struct AuditRecord {
  int type = 0;
  std::string serial;  // the event's "SECONDS.MS:SERIAL": every record of one event shares it
  std::map<std::string, std::string> fields;
  [[nodiscard]] std::string field(const std::string& key) const;
};
std::optional<AuditRecord> parse_audit_record(int type, std::string_view text);

// What the advice needs of the policy.
struct LandlockAdviceContext {
  std::vector<std::string> writable;  // work, data, temp
  bool exec_writable = false;
  std::string temp = {};  // the policy's temp (the module's TMPDIR), empty when unset
  // The policy's egress entries that are IP literals ("192.0.2.1:443", "[2001:db8::1]:443"):
  // a direct connect to one of them is on the allowlist, and only the route is wrong.
  std::vector<std::string> egress_literals = {};
  // The files the module was handed as its standard input, output and error (the caller's
  // redirections, resolved): a refusal to open one of them again by path (/dev/stderr,
  // /proc/self/fd/2) is a reopen of a descriptor it has, not a file to grant.
  std::vector<std::string> handed_files = {};
  // Where sandbox-run would give the module a /tmp of its own but a path it is given lies at
  // or below /tmp: that path (plan/mount_plan.hpp, tmp_kept_by); else empty.
  std::string tmp_kept_by = {};
};

// "ADDRESS:PORT" with the address as inet_ntop writes it ("[...]:PORT" for IPv6); "" when the
// address is not an IP literal. How egress_literals and an audit record's address compare.
std::string canonical_endpoint(const std::string& address, const std::string& port);

// The denial of one AUDIT_LANDLOCK_ACCESS record, with the event's AUDIT_SYSCALL record (pid,
// exe, the errno) when there is one.
Denial landlock_denial(const AuditRecord& access, const AuditRecord* syscall,
                       const LandlockAdviceContext& context);

// Groups records by event and keeps only this run's: a domain is this run's when its
// allocation record (AUDIT_LANDLOCK_DOMAIN status=allocated) names the module's first process,
// the one that called landlock_restrict_self, as its pid. Nothing is guessed: an access record
// of a domain never seen allocated by that pid is not this run's.
class LandlockAuditEvents {
 public:
  // maker_uid: the real uid the module's first process had when it restricted itself: the
  // launcher's, which sandbox-run keeps (root's) until after landlock_restrict_self
  // (apply/identity.hpp), and which no process of a module has. Session 20's attack review: a
  // module's own process that made a nested domain, and then freed its pid for the next run's
  // first process to get, left an allocation record naming that pid; only the uid tells it
  // apart (the module's real uid, never root's).
  LandlockAuditEvents(std::int64_t module_pid, LandlockAdviceContext context,
                      std::int64_t maker_uid)
      : module_pid_(module_pid), maker_uid_(maker_uid), context_(std::move(context)) {}

  // Takes one record; returns the denials of the events it completed.
  std::vector<Denial> feed(const AuditRecord& record);
  // The denials of every event still open (the run ended).
  std::vector<Denial> flush();
  // Whether the run's domain was identified: the kernel logs a domain's allocation once, with
  // its first refusal; where that record was lost, none of the domain's refusals can be told
  // apart from another's (session 21's attack review).
  [[nodiscard]] bool domain_seen() const { return !domains_.empty(); }

 private:
  struct Event {
    std::vector<AuditRecord> access;
    std::optional<AuditRecord> syscall;
  };
  std::vector<Denial> finish(const std::string& serial);

  std::int64_t module_pid_;
  std::int64_t maker_uid_;
  LandlockAdviceContext context_;
  std::vector<std::string> domains_;  // this run's
  std::map<std::string, Event> open_;
  std::vector<std::string> order_;  // serials of open events, oldest first
};

}  // namespace oarbank
