// Issue 14: the notifying filter variants, the supervisor's interpreter of the errno programs,
// the advice for each refusal, and the bounded table of denials (docs/denials.md).
#include "plan/denials.hpp"

#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cerrno>

#include "apply/seccomp_programs.hpp"
#include "plan/denial_advice.hpp"
#include "plan/seccomp_compile.hpp"
#include "plan/seccomp_eval.hpp"
#include "supervise/denial_audit.hpp"
#include "supervise/denial_table.hpp"

namespace oarbank {
namespace {

using seccomp::FilterVariant;
using seccomp::kVariantCount;
using seccomp::variant_from_index;

seccomp_data call(int nr, std::array<std::uint64_t, 6> args = {}) {
  seccomp_data data{};
  data.nr = nr;
  data.arch = AUDIT_ARCH_X86_64;
  for (std::size_t i = 0; i < 6; ++i) data.args[i] = args[i];
  return data;
}

std::uint32_t run(const seccomp::Program& program, const seccomp_data& data) {
  return seccomp::evaluate(program.instructions, program.length, data);
}

TEST(DenialPrograms, TheNotifyingProgramsAreWhatLibseccompCompilesNow) {
  for (int i = 0; i < kVariantCount; ++i) {
    auto program = seccomp::compile(variant_from_index(i), seccomp::Refusal::Notify);
    ASSERT_EQ(program.size(), seccomp::kNotifyPrograms[i].length) << i;
    for (std::size_t n = 0; n < program.size(); ++n) {
      EXPECT_EQ(program[n].code, seccomp::kNotifyPrograms[i].instructions[n].code);
      EXPECT_EQ(program[n].k, seccomp::kNotifyPrograms[i].instructions[n].k);
    }
  }
}

// Every call a rule refuses, with arguments that satisfy the rule: the notifying program hands
// it to the supervisor exactly when the errno program answers an errno other than ENOSYS; the
// ENOSYS refusals stay in the kernel; the supervisor's matcher finds the rule with that errno.
TEST(DenialPrograms, NotifiedExactlyWhereTheErrnoProgramRefusesWithoutENOSYS) {
  for (int i = 0; i < kVariantCount; ++i) {
    const FilterVariant variant = variant_from_index(i);
    SCOPED_TRACE(variant.name());
    for (const auto& rule : seccomp::rules_for(variant)) {
      std::array<std::uint64_t, 6> args{};
      for (const auto& check : rule.args) {
        args[check.arg] = check.op == seccomp::Compare::Greater ? check.value + 1 : check.value;
      }
      const seccomp_data data = call(seccomp::syscall_number(rule), args);
      const std::uint32_t errno_verdict = run(seccomp::kPrograms[i], data);
      const std::uint32_t notify_verdict = run(seccomp::kNotifyPrograms[i], data);
      ASSERT_EQ(errno_verdict & SECCOMP_RET_ACTION_FULL, SECCOMP_RET_ERRNO) << rule.syscall;
      const int err = static_cast<int>(errno_verdict & SECCOMP_RET_DATA);
      if (!seccomp::notified(rule)) {  // the quiet fallbacks: ENOSYS, and the rules marked quiet
        EXPECT_EQ(notify_verdict, errno_verdict) << rule.syscall;
        continue;
      }
      EXPECT_EQ(notify_verdict, SECCOMP_RET_USER_NOTIF) << rule.syscall;
      SeccompCall refused{rule.syscall, args, ""};
      EXPECT_TRUE(seccomp_refusal_reason(variant, refused, err).has_value()) << rule.syscall;
    }
    // Allowed calls stay allowed in both; the ceiling and foreign ABIs are unchanged.
    for (const auto& data : {call(SYS_getpid), call(SYS_read, {0, 0, 1}),
                             call(SYS_socketpair, {AF_UNIX, SOCK_STREAM, 0, 0}),
                             call(SYS_personality, {0xffffffff})}) {
      EXPECT_EQ(run(seccomp::kNotifyPrograms[i], data), SECCOMP_RET_ALLOW) << data.nr;
      EXPECT_EQ(run(seccomp::kPrograms[i], data), SECCOMP_RET_ALLOW) << data.nr;
    }
    EXPECT_EQ(run(seccomp::kNotifyPrograms[i], call(500)), SECCOMP_RET_ERRNO | ENOSYS);
    auto i386 = call(20);
    i386.arch = AUDIT_ARCH_I386;
    EXPECT_EQ(run(seccomp::kNotifyPrograms[i], i386), SECCOMP_RET_KILL_PROCESS);
    // personality's hand-written block notifies too.
    EXPECT_EQ(run(seccomp::kNotifyPrograms[i], call(SYS_personality, {0x400000})),
              SECCOMP_RET_USER_NOTIF);
  }
}

TEST(DenialPrograms, AListenerOfTheModulesOwnIsRefused) {
  for (int i = 0; i < kVariantCount; ++i) {
    const auto data =
        call(SYS_seccomp, {SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER});
    EXPECT_EQ(run(seccomp::kPrograms[i], data), SECCOMP_RET_ERRNO | EPERM);
    // The kernel reads the flags as 32 bits: the upper half changes nothing.
    const auto high =
        call(SYS_seccomp, {1, 0xffffffff00000000ULL | SECCOMP_FILTER_FLAG_NEW_LISTENER});
    EXPECT_EQ(run(seccomp::kPrograms[i], high), SECCOMP_RET_ERRNO | EPERM);
    EXPECT_EQ(run(seccomp::kPrograms[i], call(SYS_seccomp, {SECCOMP_SET_MODE_FILTER, 0})),
              SECCOMP_RET_ALLOW);
  }
}

TEST(DenialPrograms, TheInterpreterFailsClosed) {
  const sock_filter bad[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 1000)};
  EXPECT_EQ(seccomp::evaluate(bad, 1, call(0)), SECCOMP_RET_KILL_PROCESS);
  const sock_filter off_end[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0)};
  EXPECT_EQ(seccomp::evaluate(off_end, 1, call(0)), SECCOMP_RET_KILL_PROCESS);
  const sock_filter far_jump[] = {BPF_JUMP(BPF_JMP | BPF_JA, 7, 0, 0),
                                  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  EXPECT_EQ(seccomp::evaluate(far_jump, 2, call(0)), SECCOMP_RET_KILL_PROCESS);
}

// strace's first request on its child (session 18's real-programs review) by name.
TEST(DenialAdvice, PtraceRequestsAreNamed) {
  const FilterVariant none{false, false};
  EXPECT_EQ(seccomp_denial(none, {"ptrace", {0x4200, 77, 0}, ""}, EPERM).object,
            "PTRACE_SETOPTIONS pid 77");
  EXPECT_EQ(seccomp_denial(none, {"ptrace", {16, 5, 0}, ""}, EPERM).object, "PTRACE_ATTACH pid 5");
  EXPECT_EQ(seccomp_denial(none, {"ptrace", {0x9999, 5, 0}, ""}, EPERM).object,
            "request 39321 pid 5");
}

// Session 18: what the xattr and access-mode-3 refusals name.
TEST(DenialAdvice, XattrChangesAndAccessMode3AreNamed) {
  const FilterVariant none{false, false};
  auto access3 = seccomp_denial(none, {"openat", {0, 0, 3, 0}, "/srv/f"}, EPERM);
  EXPECT_EQ(access3.object, "/srv/f access mode 3");
  EXPECT_NE(access3.reason.find("access mode 3"), std::string::npos) << access3.reason;
  auto set = seccomp_denial(none, {"fsetxattr", {3, 0, 0, 0}, ""}, EOPNOTSUPP);
  EXPECT_NE(set.reason.find("changing extended attributes"), std::string::npos) << set.reason;
  EXPECT_EQ(seccomp_path_argument("setxattr"), 0);
}

TEST(DenialAdvice, SocketFamiliesNameThePolicyElement) {
  const FilterVariant none{false, false};
  auto unix_socket = seccomp_denial(none, {"socket", {AF_UNIX, SOCK_STREAM, 0}, ""}, EAFNOSUPPORT);
  EXPECT_EQ(unix_socket.object, "AF_UNIX SOCK_STREAM");
  EXPECT_NE(unix_socket.allowed_by.find("\"broker\": true"), std::string::npos);
  auto inet = seccomp_denial(none, {"socket", {AF_INET6, SOCK_STREAM, 0}, ""}, EAFNOSUPPORT);
  EXPECT_NE(inet.allowed_by.find("\"net\": \"egress-allowlist\""), std::string::npos);
  auto netlink = seccomp_denial(none, {"socket", {AF_NETLINK, SOCK_RAW, 0}, ""}, EAFNOSUPPORT);
  EXPECT_TRUE(netlink.allowed_by.empty());
  EXPECT_EQ(netlink.error, "EAFNOSUPPORT");
  // Session 21's attack review: it says what would allow netlink route (ip, ss).
  EXPECT_NE(netlink.reason.find("netlink route and sock_diag (ip, ss) only in a network "
                                "namespace of the module's own: sandbox-run as root on a node "
                                "whose configuration has module_world true gives it one"),
            std::string::npos)
      << netlink.reason;
  // Issue 12: in its own network namespace netlink route is allowed; other protocols and
  // families are not, and the reason says what is.
  const FilterVariant world{false, false, true};
  auto packet = seccomp_denial(world, {"socket", {AF_PACKET, SOCK_RAW, 0}, ""}, EAFNOSUPPORT);
  EXPECT_TRUE(packet.allowed_by.empty());
  EXPECT_NE(packet.reason.find("netlink route and sock_diag in the module's own namespace"),
            std::string::npos)
      << packet.reason;
  auto audit = seccomp_denial(world, {"socket", {AF_NETLINK, SOCK_RAW, 9}, ""}, EPROTONOSUPPORT);
  EXPECT_TRUE(audit.allowed_by.empty());
  EXPECT_NE(audit.reason.find("NETLINK_ROUTE and NETLINK_SOCK_DIAG only"), std::string::npos)
      << audit.reason;
  // Under egress-allowlist UDP is refused whatever the policy says.
  const FilterVariant egress{true, false};
  auto udp = seccomp_denial(egress, {"socket", {AF_INET, SOCK_DGRAM, 0}, ""}, EPROTONOSUPPORT);
  EXPECT_TRUE(udp.allowed_by.empty());
  EXPECT_NE(udp.reason.find("stream sockets only"), std::string::npos);
  auto pair = seccomp_denial(none, {"socketpair", {AF_UNIX, SOCK_DGRAM, 0}, ""}, EPROTONOSUPPORT);
  EXPECT_NE(pair.allowed_by.find("broker"), std::string::npos);
  // A datagram socket under net none: egress-allowlist would refuse it too, so no grant; the
  // reason says how a module reaches hosts instead. The broker's advice says it never listens.
  auto dns =
      seccomp_denial(none, {"socket", {AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0}, ""}, EAFNOSUPPORT);
  EXPECT_TRUE(dns.allowed_by.empty());
  EXPECT_TRUE(dns.grant.is_null());
  EXPECT_NE(dns.reason.find("a module has no DNS"), std::string::npos) << dns.reason;
  EXPECT_NE(unix_socket.allowed_by.find("a module never listens"), std::string::npos);
  EXPECT_NE(unix_socket.reason.find("nscd"), std::string::npos);
}

TEST(DenialAdvice, OtherRefusalsGiveTheRulesReason) {
  const FilterVariant none{false, false};
  auto listen = seccomp_denial(none, {"listen", {3, 1}, ""}, EPERM);
  EXPECT_EQ(listen.reason, "never listening");
  EXPECT_TRUE(listen.allowed_by.empty());
  auto chmod = seccomp_denial(none, {"chmod", {0, 04755}, "/w/prog"}, EPERM);
  EXPECT_EQ(chmod.object, "/w/prog mode 04755");
  EXPECT_NE(chmod.reason.find("setuid"), std::string::npos);
  auto tiocsti = seccomp_denial(none, {"ioctl", {0, 0xffffffff00005412ULL}, ""}, EPERM);
  EXPECT_EQ(tiocsti.object, "TIOCSTI");
  auto unknown = seccomp_denial(none, {"getpid", {}, ""}, EPERM);
  EXPECT_NE(unknown.reason.find("no rule"), std::string::npos);
  EXPECT_NE(denial_line(listen).find("no policy allows it: never listening"), std::string::npos);
}

// The audit reader keeps only what the kernel sent (port id 0): a process with CAP_NET_ADMIN
// can send to the read-log group too, and a forged record must not become a run's denial.
TEST(LandlockAuditSender, OnlyTheKernelsMessagesAreRead) {
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  kernel.nl_groups = 1U << (AUDIT_NLGRP_READLOG - 1);
  EXPECT_TRUE(audit_message_from_kernel(kernel, sizeof kernel));
  sockaddr_nl process = kernel;
  process.nl_pid = 4242;  // a user socket's port id (its pid, or an autobind number)
  EXPECT_FALSE(audit_message_from_kernel(process, sizeof process));
  process.nl_pid = 0x80000000U;  // autobind's negative ids
  EXPECT_FALSE(audit_message_from_kernel(process, sizeof process));
  // No address, or not a netlink one: not known to be the kernel's.
  EXPECT_FALSE(audit_message_from_kernel(kernel, 0));
  EXPECT_FALSE(audit_message_from_kernel(kernel, sizeof kernel - 1));
  sockaddr_nl other = kernel;
  other.nl_family = AF_UNIX;
  EXPECT_FALSE(audit_message_from_kernel(other, sizeof other));
}

TEST(DenialTable, DeduplicatesAndCountsWhatItDrops) {
  DenialTable table(2);
  Denial a{"seccomp", "listen", "", "EPERM", 10, "/bin/x", 1, "", "never listening"};
  Denial b = a;
  b.operation = "ptrace";
  Denial c = a;
  c.operation = "bpf";
  table.add(a);
  table.add(a);
  a.pid = 11;  // another process of the same executable: the same denial
  table.add(a);
  table.add(b);
  table.add(c);
  table.add(c);
  const auto list = table.denials();
  ASSERT_EQ(list.size(), 2U);
  EXPECT_EQ(list[0].count, 3U);
  EXPECT_EQ(list[0].pid, 10);
  EXPECT_EQ(list[1].operation, "ptrace");
  EXPECT_EQ(table.dropped(), 2U);
}

// A module names any bytes; the result's JSON must still be written (dump() throws on invalid
// UTF-8). Valid UTF-8 is kept as it is; every other byte is "\xNN"; the grant goes with it.
TEST(DenialJson, BytesThatAreNotUtf8AreEscapedAndTheirGrantDropped) {
  EXPECT_EQ(utf8_or_escaped("/srv/caf\xc3\xa9"), "/srv/caf\xc3\xa9");
  EXPECT_EQ(utf8_or_escaped("/a\xff\xfe"), "/a\\xff\\xfe");
  EXPECT_EQ(utf8_or_escaped("/a\xc3"), "/a\\xc3");                // cut short
  EXPECT_EQ(utf8_or_escaped("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(utf8_or_escaped("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(utf8_or_escaped("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");
  Denial d;
  d.mechanism = "landlock-fs";
  d.operation = "fs.read_file";
  d.object = "/srv/\xff/x";
  d.executable = "/usr/bin/cat";
  d.allowed_by = "add /srv/\xff to \"data\"";
  d.reason = "read under /srv/\xff: not granted";
  d.grant = {{"key", "data"}, {"add", "/srv/\xff"}};
  Denial fine = d;
  fine.object = "/srv/ok/x";
  fine.grant = {{"key", "data"}, {"add", "/srv/ok"}};
  fine.allowed_by = "add /srv/ok to \"data\"";
  const auto json = denials_to_json({d, fine});
  EXPECT_NO_THROW(static_cast<void>(json.dump()));
  EXPECT_EQ(json[0]["object"], "/srv/\\xff/x");
  EXPECT_EQ(json[0]["reason"], "read under /srv/\\xff: not granted");
  EXPECT_TRUE(json[0]["grant"].is_null());
  EXPECT_TRUE(json[0]["allowed_by"].is_null());
  EXPECT_EQ(json[1]["grant"]["add"], "/srv/ok");
}

// Session 21's attack review: a module chooses the bytes of what it is refused: 4,096 of them
// a path, 256 records a run. What is shown is cut at 512 bytes (no grant then: the path shown
// is another), and a name that holds the line's own separators is quoted, so it cannot read as
// the line's advice.
TEST(DenialLine, AModulesNamesAreCutAndCannotReadAsTheLine) {
  Denial d;
  d.mechanism = "seccomp";
  d.operation = "mount";
  d.object = "/data by /usr/bin/python3 (pid 1), once: harmless; allowed by \"exec_writable\"";
  d.executable = "/srv/b/spoof";
  d.pid = 7;
  d.error = "EPERM";
  d.reason = "never mounting";
  EXPECT_EQ(denial_line(d),
            "refused (seccomp): mount \"/data by /usr/bin/python3 (pid 1), once: harmless; allowed "
            "by \\\"exec_writable\\\"\" by /srv/b/spoof (pid 7), once: no policy allows it: "
            "never mounting");
  Denial plain = d;
  plain.object = "/srv/my files/x.txt";
  EXPECT_EQ(denial_line(plain).find("mount /srv/my files/x.txt by /srv/b/spoof (pid 7)"),
            std::string("refused (seccomp): ").size());
  Denial long_one = d;
  long_one.mechanism = "landlock-fs";
  long_one.object = "/srv/" + std::string(4000, 'a') + "/\xc3\xa9";
  long_one.grant = {{"key", "data"}, {"add", long_one.object}};
  long_one.allowed_by = "add it";
  const std::string line = denial_line(long_one);
  EXPECT_LT(line.size(), 700U) << line;
  EXPECT_NE(line.find("a... (4008 bytes)"), std::string::npos) << line;
  const auto json = denials_to_json({long_one});
  EXPECT_EQ(json[0]["object"], "/srv/" + std::string(507, 'a') + "... (4008 bytes)");
  EXPECT_TRUE(json[0]["grant"].is_null());
  // Cut at a character's start, never inside it.
  Denial accented = d;
  accented.object = "/" + std::string(510, 'b') + "\xc3\xa9\xc3\xa9";
  EXPECT_EQ(denials_to_json({accented})[0]["object"],
            "/" + std::string(510, 'b') + "... (515 bytes)");
}

}  // namespace
}  // namespace oarbank

namespace oarbank {
namespace {

// Allowed calls cost nothing more under sandbox-run: for every syscall number the filter
// allows (with zero arguments, and with the arguments common calls pass), the notifying
// program runs no more instructions than the errno program. (libseccomp merges rules whose
// actions became equal, so the programs are not the same length.) Which calls look at their
// arguments, and so which verdicts the kernel caches, is the same: the same rules.
TEST(DenialPrograms, AllowedCallsRunNoMoreInstructions) {
  const std::array<std::array<std::uint64_t, 6>, 4> arg_sets = {
      {{0, 0, 0, 0, 0, 0},
       {3, 0x5401, 0, 0, 0, 0},
       {AF_UNIX, SOCK_STREAM, 0, 0, 0, 0},
       {0xffffff9c, 0, 0x241, 0644, 0, 0}}};
  for (int i = 0; i < seccomp::kVariantCount; ++i) {
    std::size_t allowed = 0;
    for (int nr = 0; nr <= 470; ++nr) {
      for (const auto& args : arg_sets) {
        const auto data = call(nr, args);
        std::size_t errno_steps = 0, notify_steps = 0;
        const auto verdict = seccomp::evaluate(seccomp::kPrograms[i].instructions,
                                               seccomp::kPrograms[i].length, data, &errno_steps);
        if (verdict != SECCOMP_RET_ALLOW) continue;
        ++allowed;
        EXPECT_EQ(seccomp::evaluate(seccomp::kNotifyPrograms[i].instructions,
                                    seccomp::kNotifyPrograms[i].length, data, &notify_steps),
                  SECCOMP_RET_ALLOW)
            << nr;
        EXPECT_LE(notify_steps, errno_steps) << "syscall " << nr;
      }
    }
    EXPECT_GT(allowed, 1000U);
  }
}

}  // namespace
}  // namespace oarbank

#include "plan/landlock_denial.hpp"

namespace oarbank {
namespace {

AuditRecord record(int type, const std::string& text) {
  auto parsed = parse_audit_record(type, text);
  EXPECT_TRUE(parsed.has_value()) << text;
  return parsed.value_or(AuditRecord{});
}

TEST(LandlockAudit, RecordsParseWithQuotedAndHexValues) {
  auto r = record(kAuditLandlockAccess,
                  "audit(1796125241.464:203): domain=1544bfdab blockers=fs.read_file "
                  "path=\"/usr/bin/cat\" dev=\"vda\" ino=247134");
  EXPECT_EQ(r.serial, "1796125241.464:203");
  EXPECT_EQ(r.field("domain"), "1544bfdab");
  EXPECT_EQ(r.field("path"), "/usr/bin/cat");
  EXPECT_EQ(r.field("ino"), "247134");
  // audit writes a name with a space as hexadecimal, unquoted.
  auto hex = record(kAuditLandlockAccess, "audit(1.2:3): blockers=fs.read_file path=2F612062");
  EXPECT_EQ(hex.field("path"), "/a b");
  EXPECT_FALSE(parse_audit_record(1423, "no header").has_value());
}

// Only the domain whose allocation names the module's first pid is this run's: another
// module's records, even of the same executable, are never taken.
TEST(LandlockAudit, OnlyTheRunsOwnDomainIsKept) {
  LandlockAuditEvents events(300, {{"/w"}, false}, 0);
  std::vector<Denial> got;
  auto feed = [&](int type, const std::string& text) {
    for (auto& d : events.feed(record(type, text))) got.push_back(d);
  };
  // Another module's domain, allocated by pid 400.
  feed(1423, "audit(1.0:10): domain=bbb blockers=fs.read_file path=\"/x\" dev=\"vda\" ino=1");
  feed(1424, "audit(1.0:10): domain=bbb status=allocated mode=enforcing pid=400 uid=0 exe=\"/p\"");
  feed(1300, "audit(1.0:10): arch=c000003e syscall=257 success=no exit=-13 pid=400 exe=\"/p\"");
  feed(1320, "audit(1.0:10): ");
  EXPECT_TRUE(got.empty());
  // Ours: allocated by pid 300; its first denial is in the same event.
  feed(1423, "audit(1.0:11): domain=aaa blockers=fs.execute path=\"/w/prog\" dev=\"vda\" ino=2");
  feed(1423, "audit(1.0:12): domain=bbb blockers=fs.read_file path=\"/y\" dev=\"vda\" ino=3");
  feed(1424, "audit(1.0:11): domain=aaa status=allocated mode=enforcing pid=300 uid=0 exe=\"/p\"");
  feed(1300, "audit(1.0:11): arch=c000003e syscall=59 success=no exit=-13 pid=301 exe=\"/p\"");
  feed(1320, "audit(1.0:11): ");
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].mechanism, "landlock-fs");
  EXPECT_EQ(got[0].operation, "fs.execute");
  EXPECT_EQ(got[0].pid, 301);
  EXPECT_EQ(got[0].allowed_by, "set \"exec_writable\": true");
  // A later access of ours, with no syscall record, comes out at the flush.
  feed(1423, "audit(1.0:13): domain=aaa blockers=net.connect_tcp daddr=127.0.0.1 dest=8080");
  auto rest = events.flush();
  ASSERT_EQ(rest.size(), 1U);  // bbb's access of event 12 is not ours
  EXPECT_EQ(rest[0].mechanism, "landlock-net");
  EXPECT_EQ(rest[0].object, "127.0.0.1:8080");
  EXPECT_TRUE(rest[0].allowed_by.empty());
}

// Session 20's attack review: the run's domain is made with the launcher's real uid (root's:
// sandbox-run sets the module's after restrict_self). A domain allocated under the same pid by
// a module's process (a nested domain of a process whose pid the run's first process got
// later, or of the first process itself) has the module's real uid, and is not the run's, for
// a shared module user and a uid of its own alike.
TEST(LandlockAudit, ADomainOfTheSamePidMadeWithAModulesUidIsNotTheRuns) {
  LandlockAuditEvents events(300, {{"/w"}, false}, 0);
  std::vector<Denial> got;
  auto feed = [&](int type, const std::string& text) {
    for (auto& d : events.feed(record(type, text))) got.push_back(d);
  };
  for (const char* uid : {"65534", "61190"}) {
    const std::string serial = std::string("audit(1.0:2") + uid[4] + "): ";
    feed(1423, serial + "domain=c" + uid + " blockers=fs.read_file path=\"/x\" dev=\"vda\" ino=1");
    feed(1424, serial + "domain=c" + uid + " status=allocated mode=enforcing pid=300 uid=" + uid +
                   " exe=\"/p\"");
    feed(1300, serial + "arch=c000003e syscall=257 success=no exit=-13 pid=300 exe=\"/p\"");
    feed(1320, serial);
  }
  EXPECT_TRUE(got.empty());
  // Session 21's attack review: none of those is the run's: not seen (the result says
  // "unrecorded" where the socket overflowed, rather than "recorded, some lost").
  EXPECT_FALSE(events.domain_seen());
  feed(1423, "audit(1.0:21): domain=ddd blockers=fs.read_file path=\"/y\" dev=\"vda\" ino=2");
  feed(1424, "audit(1.0:21): domain=ddd status=allocated mode=enforcing pid=300 uid=0 exe=\"/p\"");
  feed(1300, "audit(1.0:21): arch=c000003e syscall=257 success=no exit=-13 pid=300 exe=\"/p\"");
  feed(1320, "audit(1.0:21): ");
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].object, "/y");
  EXPECT_TRUE(events.domain_seen());
  EXPECT_TRUE(events.flush().empty());
}

TEST(LandlockAudit, AdviceNamesThePolicyElement) {
  const LandlockAdviceContext context{{"/srv/work"}, false};
  auto read = landlock_denial(
      record(1423, "audit(1:1): domain=a blockers=fs.read_file path=\"/srv/cache/x\""), nullptr,
      context);
  EXPECT_EQ(read.reason, "read under /srv/cache: not granted");
  EXPECT_NE(read.allowed_by.find("add /srv/cache to \"runtime\""), std::string::npos);
  EXPECT_EQ(read.grant, nlohmann::json({{"key", "runtime"}, {"add", "/srv/cache"}}));
  auto write =
      landlock_denial(record(1423, "audit(1:1): domain=a blockers=fs.make_reg path=\"/srv/cache\""),
                      nullptr, context);
  EXPECT_EQ(write.reason, "write under /srv/cache: not granted");
  auto exec =
      landlock_denial(record(1423, "audit(1:1): domain=a blockers=fs.execute path=\"/opt/tool\""),
                      nullptr, context);
  EXPECT_NE(exec.allowed_by.find("\"tools\""), std::string::npos);
  auto bind = landlock_denial(record(1423, "audit(1:1): domain=a blockers=net.bind_tcp src=80"),
                              nullptr, context);
  EXPECT_TRUE(bind.allowed_by.empty());
  EXPECT_EQ(bind.object, "port 80");
}

// What real programs met (session 11's run of ordinary programs inside): on Linux 6.15 and
// later an execve is refused "fs.execute,fs.read_file", an execution, never advice to write
// there; a bind names its own address and port 0; a connect to loopback says the proxy will
// not reach it either; /dev/tty names /dev, /tmp the policy's temp; a device ioctl says that no
// policy grants one.
TEST(LandlockAudit, WhatRealProgramsMetIsNamedAsItIs) {
  const LandlockAdviceContext context{{"/srv/work"}, false};
  auto advice = [&](const std::string& fields) {
    return landlock_denial(record(1423, "audit(1:1): domain=a " + fields), nullptr, context);
  };
  const Denial exec = advice("blockers=fs.execute,fs.read_file path=\"/srv/x/bin/tool\"");
  EXPECT_EQ(exec.reason, "execute /srv/x/bin/tool: not granted");
  EXPECT_EQ(exec.grant, nlohmann::json({{"key", "tools"}, {"add", "/srv/x/bin/tool"}}));
  const Denial exec_written = advice("blockers=fs.execute,fs.read_file path=\"/srv/work/a.out\"");
  EXPECT_EQ(exec_written.grant, nlohmann::json({{"key", "exec_writable"}, {"set", true}}));
  const Denial bind_any = advice("blockers=net.bind_tcp saddr=127.0.0.1");
  EXPECT_EQ(bind_any.object, "127.0.0.1:0");
  EXPECT_EQ(advice("blockers=net.bind_tcp").object, "port 0");
  const Denial loopback = advice("blockers=net.connect_tcp daddr=127.0.0.1 dest=8080");
  EXPECT_EQ(loopback.object, "127.0.0.1:8080");
  EXPECT_NE(loopback.reason.find("loopback and link-local addresses are never reachable"),
            std::string::npos)
      << loopback.reason;
  EXPECT_EQ(advice("blockers=net.connect_tcp daddr=192.0.2.1 dest=443").reason.find("loopback"),
            std::string::npos);
  const Denial tty = advice("blockers=fs.write_file,fs.read_file path=\"/dev/tty\"");
  EXPECT_TRUE(tty.grant.is_null());
  EXPECT_NE(tty.reason.find("the node's own /dev is never a module's"), std::string::npos)
      << tty.reason;
  for (const std::string dir : {"/tmp", "/var/tmp"}) {
    // A file made is refused on its directory: lsm_audit names the directory.
    const Denial tmp = advice("blockers=fs.make_reg path=\"" + dir + "\"");
    EXPECT_TRUE(tmp.grant.is_null()) << dir;
    EXPECT_NE(tmp.reason.find("never proposed; a module's temporary files go in the policy's "
                              "\"temp\""),
              std::string::npos)
        << tmp.reason;
  }
  // Session 16's review: with temp set, "set it" was wrong advice (Java ignores TMPDIR).
  const LandlockAdviceContext with_temp{{"/srv/work", "/srv/tmp"}, false, "/srv/tmp"};
  const Denial java = landlock_denial(
      record(1423, "audit(1:1): domain=a blockers=fs.make_reg path=\"/tmp\""), nullptr, with_temp);
  EXPECT_TRUE(java.grant.is_null());
  EXPECT_NE(java.reason.find("the policy's \"temp\" (/srv/tmp) is the module's TMPDIR, which "
                             "this program does not follow: point it there (Java: "
                             "-Djava.io.tmpdir=/srv/tmp)"),
            std::string::npos)
      << java.reason;
  EXPECT_EQ(java.reason.find("out of /tmp"), std::string::npos) << java.reason;
  // Session 20's real-programs review: where a path of the policy kept the node's /tmp, the
  // refusal names it and the move that gives the module a /tmp of its own.
  LandlockAdviceContext kept = with_temp;
  kept.tmp_kept_by = "/tmp/m/work";
  const Denial in_tmp = landlock_denial(
      record(1423, "audit(1:1): domain=a blockers=fs.make_reg path=\"/tmp\""), nullptr, kept);
  EXPECT_TRUE(in_tmp.grant.is_null());
  EXPECT_NE(in_tmp.reason.find("; or move /tmp/m/work out of /tmp: with nothing of its policy at "
                               "or below /tmp, sandbox-run gives the module a /tmp of its own"),
            std::string::npos)
      << in_tmp.reason;
  const Denial ioctl = advice("blockers=fs.ioctl_dev path=\"/dev/null\"");
  EXPECT_TRUE(ioctl.grant.is_null());
  EXPECT_NE(ioctl.reason.find("refuses device ioctls to every module"), std::string::npos);
}

// Attack review: the paths --learn would propose are the ones a hostile module chose to be
// refused. "/", a top-level directory (/tmp, /home), and what is, holds or lies in the base
// system or the kernel's and the node's trees (/etc, /proc/PID, /dev/shm, /run) get no grant;
// a directory below a top-level one still does. A name with spaces and quotes arrives in hex.
TEST(LandlockAudit, NoGrantForTheRootATopLevelDirectoryOrTheSystemsTrees) {
  const LandlockAdviceContext context{{"/srv/work"}, false};
  auto advice = [&](const std::string& blockers, const std::string& path) {
    return landlock_denial(
        record(1423, "audit(1:1): domain=a blockers=" + blockers + " path=\"" + path + "\""),
        nullptr, context);
  };
  for (const auto& [blockers, path] : std::vector<std::pair<std::string, std::string>>{
           {"fs.read_dir", "/"},
           {"fs.read_file", "/secret"},
           {"fs.read_dir", "/tmp"},
           {"fs.make_reg", "/home"},
           {"fs.write_file", "/etc/passwd"},
           {"fs.make_reg", "/etc/oarbank"},
           {"fs.write_file", "/proc/1234/attr/current"},
           {"fs.make_reg", "/dev/shm"},
           {"fs.make_dir", "/run/oarbank/runs"},
           {"fs.read_file", "/sys/kernel/notes"},
           {"fs.execute", "/usr/local/bin/tool"},
           {"fs.execute", "/tool"}}) {
    const Denial d = advice(blockers, path);
    EXPECT_TRUE(d.grant.is_null()) << blockers << " " << path << ": " << d.grant.dump();
    EXPECT_TRUE(d.allowed_by.empty()) << path;
    EXPECT_NE(d.reason.find("never"), std::string::npos) << d.reason;
  }
  // Below a top-level directory that is not the system's: still proposed.
  EXPECT_EQ(advice("fs.read_file", "/srv/cache/x").grant,
            nlohmann::json({{"key", "runtime"}, {"add", "/srv/cache"}}));
  EXPECT_EQ(advice("fs.make_reg", "/var/lib/job").grant,
            nlohmann::json({{"key", "data"}, {"add", "/var/lib/job"}}));
  // "/srv/a b\"c/x" in audit's hexadecimal form: one field, decoded, the quote kept.
  auto hex = landlock_denial(
      record(1423,
             "audit(1:1): domain=a blockers=fs.read_file path=2F7372762F61206222632F78 "
             "dev=\"vda\" ino=5"),
      nullptr, context);
  EXPECT_EQ(hex.object, "/srv/a b\"c/x");
  EXPECT_EQ(hex.grant, nlohmann::json({{"key", "runtime"}, {"add", "/srv/a b\"c"}}));
}

// The lines --learn prints are ASCII: C1 controls (here U+009B, CSI) are escaped as JSON.
TEST(DenialGrants, TheChangeLineIsAscii) {
  nlohmann::json policy = {{"version", 1}, {"bundle", "/b"}};
  EXPECT_EQ(apply_grant(policy, {{"key", "data"},
                                 {"add",
                                  "/srv/\xc2\x9b"
                                  "2J"}}),
            "+ \"data\": \"/srv/\\u009b2J\"");
}

// Session 18's real-programs review: the JVM's /tmp/hsperfdata_USER follows no
// java.io.tmpdir, so the /tmp advice names -XX:-UsePerfData for java instead.
TEST(LandlockAudit, JavasPerfDataDirectoryInTmpNamesUsePerfData) {
  const LandlockAdviceContext context{{"/srv/work", "/srv/tmp"}, false, "/srv/tmp"};
  const auto syscall = record(1300,
                              "audit(1:1): arch=c000003e syscall=83 success=no exit=-13 pid=7 "
                              "exe=\"/usr/lib/jvm/java-17-openjdk-amd64/bin/java\"");
  auto java = landlock_denial(
      record(1423, "audit(1:1): domain=a blockers=fs.make_dir path=\"/tmp\" dev=\"vda\" ino=2"),
      &syscall, context);
  EXPECT_NE(java.reason.find("-XX:-UsePerfData"), std::string::npos) << java.reason;
  EXPECT_TRUE(java.grant.is_null());
  // Another program's directory in /tmp keeps the TMPDIR advice.
  const auto other_syscall = record(
      1300, "audit(1:1): arch=c000003e syscall=83 success=no exit=-13 pid=7 exe=\"/usr/bin/x\"");
  auto other = landlock_denial(
      record(1423, "audit(1:1): domain=a blockers=fs.make_dir path=\"/tmp\" dev=\"vda\" ino=2"),
      &other_syscall, context);
  EXPECT_NE(other.reason.find("-Djava.io.tmpdir=/srv/tmp"), std::string::npos) << other.reason;
}

// The denial of one Landlock file-system refusal of `blockers` on `path`, no syscall record.
Denial fs_denial(const std::string& blockers, const std::string& path,
                 const LandlockAdviceContext& context) {
  return landlock_denial(record(1423, "audit(1:1): domain=a blockers=" + blockers + " path=\"" +
                                          path + "\" dev=\"vda\" ino=2"),
                         nullptr, context);
}

// Session 19's real-programs review: glibc's tmpfile(3) makes an O_TMPFILE file in /tmp whatever
// TMPDIR says; its record names "/tmp/#INODE (deleted)", and the advice says so instead of
// "point the program at TMPDIR", which no policy or variable can do for it.
TEST(LandlockAudit, TmpfilesUnnamedFileInTmpSaysTmpdirCannotMoveIt) {
  const LandlockAdviceContext context{{"/srv/work", "/srv/tmp"}, false, "/srv/tmp"};
  auto tmpfile = fs_denial("fs.write_file,fs.read_file", "/tmp/#10952726 (deleted)", context);
  EXPECT_NE(tmpfile.reason.find("glibc's tmpfile(3)"), std::string::npos) << tmpfile.reason;
  EXPECT_NE(tmpfile.reason.find("(/srv/tmp)"), std::string::npos) << tmpfile.reason;
  EXPECT_TRUE(tmpfile.grant.is_null());
  // A named file in /tmp keeps the TMPDIR advice.
  auto named = fs_denial("fs.write_file", "/tmp/#notes", context);
  EXPECT_EQ(named.reason.find("tmpfile(3)"), std::string::npos) << named.reason;
  EXPECT_NE(named.reason.find("TMPDIR"), std::string::npos) << named.reason;
}

// Session 19's attack review: a module that reopened its own stderr (a file of the operator's)
// by path was told to add the operator's log directory to "runtime"; it is told to use the
// descriptor it has, with no grant.
TEST(LandlockAudit, AReopenedStandardFileIsNeverProposed) {
  LandlockAdviceContext context{{"/srv/work"}, false};
  context.handed_files = {"/var/log/ops/module.err"};
  auto reopened = fs_denial("fs.write_file", "/var/log/ops/module.err", context);
  EXPECT_NE(reopened.reason.find("opened again by path"), std::string::npos) << reopened.reason;
  EXPECT_TRUE(reopened.grant.is_null());
  EXPECT_TRUE(reopened.allowed_by.empty());
  // Another file in the same directory keeps its advice.
  auto other = fs_denial("fs.write_file", "/var/log/ops/other", context);
  EXPECT_EQ(other.reason.find("opened again by path"), std::string::npos) << other.reason;
  // A shell's >/dev/stderr (O_CREAT): a file made in the process's descriptor directory.
  auto shell = fs_denial("fs.make_reg", "/proc/4242/fd", context);
  EXPECT_NE(shell.reason.find("opened again by path"), std::string::npos) << shell.reason;
}

// Session 18's review: a direct connect to an address the allowlist names is told the route,
// not to name the destination it already names.
TEST(LandlockAudit, ADirectConnectToAListedAddressIsToldToUseTheProxy) {
  LandlockAdviceContext context{{"/srv/work"}, false};
  context.egress_literals = {canonical_endpoint("192.0.2.1", "443"),
                             canonical_endpoint("2001:0db8::1", "443")};
  auto listed = landlock_denial(
      record(1423, "audit(1:1): domain=a blockers=net.connect_tcp daddr=192.0.2.1 dest=443"),
      nullptr, context);
  EXPECT_EQ(listed.object, "192.0.2.1:443");
  EXPECT_NE(listed.reason.find("192.0.2.1:443 is on the module's egress allowlist, but a module "
                               "reaches it only through the agent's proxy"),
            std::string::npos)
      << listed.reason;
  auto listed6 = landlock_denial(
      record(1423, "audit(1:1): domain=a blockers=net.connect_tcp daddr=2001:db8::1 dest=443"),
      nullptr, context);
  EXPECT_NE(listed6.reason.find("is on the module's egress allowlist"), std::string::npos)
      << listed6.reason;
  // A dual-stack socket's IPv4-mapped address is the IPv4 one.
  auto mapped = landlock_denial(
      record(1423, "audit(1:1): domain=a blockers=net.connect_tcp daddr=::ffff:192.0.2.1 dest=443"),
      nullptr, context);
  EXPECT_NE(mapped.reason.find("is on the module's egress allowlist"), std::string::npos)
      << mapped.reason;
  // Another port of the same address is not listed.
  auto other = landlock_denial(
      record(1423, "audit(1:1): domain=a blockers=net.connect_tcp daddr=192.0.2.1 dest=80"),
      nullptr, context);
  EXPECT_NE(other.reason.find("name the destination in \"egress\""), std::string::npos)
      << other.reason;
}

// Landlock's scope refusals, as lsm_audit writes them on 6.18: a signal names the target task
// (opid, ocomm), an abstract unix socket its address in hexadecimal with the leading NUL.
TEST(LandlockAudit, ScopeRefusalsNameTheTargetAndNoPolicyChange) {
  const LandlockAdviceContext context{{"/srv/work"}, false};
  auto signal = landlock_denial(
      record(1423, "audit(1:1): domain=a blockers=scope.signal opid=4242 ocomm=\"sleep\""), nullptr,
      context);
  EXPECT_EQ(signal.mechanism, "landlock-scope");
  EXPECT_EQ(signal.operation, "scope.signal");
  EXPECT_EQ(signal.object, "pid 4242");
  EXPECT_NE(signal.reason.find("never allowed"), std::string::npos);
  EXPECT_TRUE(signal.allowed_by.empty());
  EXPECT_TRUE(signal.grant.is_null());
  // "\0den-1": 00 64 65 6E 2D 31; the name is shown as "@den-1", with no NUL in the object.
  auto unix_socket = landlock_denial(
      record(1423, "audit(1:1): domain=a blockers=scope.abstract_unix_socket path=0064656E2D31"),
      nullptr, context);
  EXPECT_EQ(unix_socket.mechanism, "landlock-scope");
  EXPECT_EQ(unix_socket.operation, "scope.abstract_unix_socket");
  EXPECT_EQ(unix_socket.object, "@den-1");
  EXPECT_NE(unix_socket.reason.find("never allowed"), std::string::npos);
  EXPECT_TRUE(unix_socket.allowed_by.empty());
  EXPECT_TRUE(unix_socket.grant.is_null());
}

}  // namespace
}  // namespace oarbank

namespace oarbank {
namespace {

TEST(DenialAdvice, ProxyRefusalsFromTheLog) {
  auto unlisted =
      proxy_denial(R"J({"event":"decision","method":"CONNECT","destination":"api.other.com:443",)J"
                   R"J("verdict":"refuse","status":403,)J"
                   R"J("reason":"api.other.com:443 is not on the module's egress allowlist"})J");
  ASSERT_TRUE(unlisted.has_value());
  EXPECT_EQ(unlisted->mechanism, "proxy");
  EXPECT_EQ(unlisted->allowed_by, "add \"api.other.com:443\" to \"egress\"");
  EXPECT_EQ(unlisted->error, "403");
  EXPECT_EQ(unlisted->count, 1u);
  // A line the proxy wrote for repeated refusals counts them all.
  auto repeated =
      proxy_denial(R"J({"event":"decision","method":"CONNECT","destination":"api.other.com:443",)J"
                   R"J("verdict":"refuse","status":403,"repeated":1999,)J"
                   R"J("reason":"api.other.com:443 is not on the module's egress allowlist"})J");
  ASSERT_TRUE(repeated.has_value());
  EXPECT_EQ(repeated->count, 1999u);
  auto private_range = proxy_denial(
      R"J({"event":"decision","method":"CONNECT","destination":"intra.example:443",)J"
      R"J("verdict":"refuse","status":403,)J"
      R"J("reason":"intra.example resolves to 10.0.0.1, a private range (RFC 1918)"})J");
  ASSERT_TRUE(private_range.has_value());
  EXPECT_TRUE(private_range->allowed_by.empty());
  EXPECT_FALSE(proxy_denial(R"J({"event":"decision","verdict":"allow"})J").has_value());
  EXPECT_FALSE(proxy_denial(R"J({"event":"closed"})J").has_value());
  EXPECT_FALSE(proxy_denial("not json").has_value());
}

}  // namespace
}  // namespace oarbank

namespace oarbank {
namespace {

// Session 21's diff review: a path that is the tail of a longer one is not named by it.
TEST(DenialGrants, ALineNamesAPathOnlyWhole) {
  const std::string line = "step directories failed: data /srv/data (data) contains /srv/jobs/w";
  EXPECT_TRUE(line_names_path(line, "/srv/data"));
  EXPECT_FALSE(line_names_path(line, "/data"));
  EXPECT_FALSE(line_names_path(line, "/srv/jobs"));
  EXPECT_TRUE(line_names_path(line, "/srv/jobs/w"));
  EXPECT_FALSE(line_names_path(line, ""));
}

TEST(DenialGrants, ApplyAddsAndSetsOnce) {
  nlohmann::json policy = {{"version", 1}, {"bundle", "/b"}, {"egress", {"a.com:443"}}};
  EXPECT_EQ(apply_grant(policy, {{"key", "data"}, {"add", "/srv/cache"}}),
            "+ \"data\": \"/srv/cache\"");
  EXPECT_EQ(apply_grant(policy, {{"key", "data"}, {"add", "/srv/cache"}}), "");
  EXPECT_EQ(apply_grant(policy, {{"key", "egress"}, {"add", "b.com:443"}}),
            "+ \"egress\": \"b.com:443\"");
  EXPECT_EQ(apply_grant(policy, {{"key", "broker"}, {"set", true}}), "\"broker\": (unset) -> true");
  EXPECT_EQ(apply_grant(policy, {{"key", "broker"}, {"set", true}}), "");
  EXPECT_EQ(apply_grant(policy, nullptr), "");
  EXPECT_EQ(policy["data"], nlohmann::json::array({"/srv/cache"}));
  EXPECT_EQ(policy["egress"], nlohmann::json::array({"a.com:443", "b.com:443"}));
  // What no policy may grant carries no grant.
  auto listen = seccomp_denial({false, false}, {"listen", {3, 1}, ""}, EPERM);
  EXPECT_TRUE(listen.grant.is_null());
}

}  // namespace
}  // namespace oarbank

#include "plan/capabilities.hpp"

namespace oarbank {
namespace {

TEST(DenialRows, PerKernelAndNode) {
  KernelFeatures f;
  f.landlock = LandlockState::Present;
  f.landlock_abi = 7;
  f.seccomp_filter = true;
  f.seccomp_user_notif = true;
  f.running_as_root = true;
  f.audit_enabled = 1;
  NodeConfig config;
  auto status = [&](CapabilityRow row) { return evaluate_capability(row, f, config).status; };
  EXPECT_EQ(status(CapabilityRow::DenialsSyscalls), CapabilityStatus::Enforced);
  EXPECT_EQ(status(CapabilityRow::DenialsFilesystem), CapabilityStatus::Enforced);
  EXPECT_EQ(status(CapabilityRow::DenialsNetwork), CapabilityStatus::Enforced);
  // Audit off: only where the node asks for it to be turned on.
  f.audit_enabled = 0;
  EXPECT_EQ(status(CapabilityRow::DenialsFilesystem), CapabilityStatus::Unavailable);
  config.denial_audit = "enable";
  EXPECT_EQ(status(CapabilityRow::DenialsFilesystem), CapabilityStatus::Enforced);
  config.denial_audit = "off";
  EXPECT_EQ(status(CapabilityRow::DenialsNetwork), CapabilityStatus::Unavailable);
  config.denial_audit = "if-enabled";
  f.audit_enabled = 1;
  // The 6.12 guest: Landlock ABI 6 writes no audit records.
  f.landlock_abi = 6;
  const auto verdict = evaluate_capability(CapabilityRow::DenialsFilesystem, f, config);
  EXPECT_EQ(verdict.status, CapabilityStatus::Unavailable);
  EXPECT_NE(verdict.reason.find("ABI 7 (Linux 6.15)"), std::string::npos);
  f.landlock_abi = 7;
  f.running_as_root = false;
  EXPECT_EQ(status(CapabilityRow::DenialsFilesystem), CapabilityStatus::Unavailable);
  f.seccomp_user_notif = false;
  EXPECT_EQ(status(CapabilityRow::DenialsSyscalls), CapabilityStatus::Unavailable);
  // No policy needs them.
  const auto needed = rows_needed_by(Policy{}, config);
  EXPECT_EQ(std::count(needed.begin(), needed.end(), CapabilityRow::DenialsSyscalls), 0);
}

}  // namespace
}  // namespace oarbank
