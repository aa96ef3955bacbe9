// The filter table and its compiled programs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <array>
#include <cstring>
#include <map>
#include <set>

#include "apply/seccomp_programs.hpp"
#include "plan/seccomp_compact.hpp"
#include "plan/seccomp_compile.hpp"
#include "plan/seccomp_eval.hpp"
#include "plan/seccomp_rules.hpp"

namespace oarbank::seccomp {
namespace {

TEST(SeccompRules, EveryVariantCompilesWithLibseccomp) {
  for (int i = 0; i < kVariantCount; ++i) {
    auto program = compile(variant_from_index(i));
    EXPECT_GT(program.size(), 10U);
    EXPECT_LT(program.size(), 4096U);
  }
}

TEST(SeccompRules, TheBuiltInProgramsAreWhatLibseccompCompilesNow) {
  for (int i = 0; i < kVariantCount; ++i) {
    auto program = compile(variant_from_index(i));
    ASSERT_EQ(program.size(), kPrograms[i].length) << variant_from_index(i).name();
    for (std::size_t n = 0; n < program.size(); ++n) {
      EXPECT_EQ(program[n].code, kPrograms[i].instructions[n].code);
      EXPECT_EQ(program[n].k, kPrograms[i].instructions[n].k);
    }
  }
}

TEST(SeccompRules, ProgramsStartWithTheSyscallCeiling) {
  const auto& program = kPrograms[0];
  ASSERT_GE(program.length, 3U);
  EXPECT_EQ(program.instructions[1].k, kHighestReviewedSyscallX86_64);
  EXPECT_EQ(program.instructions[2].k, SECCOMP_RET_ERRNO | ENOSYS);
}

TEST(SeccompRules, EveryRuleSaysWhy) {
  for (int i = 0; i < kVariantCount; ++i) {
    for (const auto& rule : rules_for(variant_from_index(i))) {
      EXPECT_FALSE(rule.why.empty()) << rule.syscall;
      // 0 makes the call return 0 without running: only advice the kernel may ignore
      // (posix_fadvise's DONTNEED, session 18) is answered so.
      if (rule.syscall != "fadvise64") {
        EXPECT_NE(rule.errno_value, 0) << rule.syscall;
      }
    }
  }
}

std::set<std::string> syscalls_of(const FilterVariant& variant) {
  std::set<std::string> names;
  for (const auto& rule : rules_for(variant)) names.insert(rule.syscall);
  return names;
}

TEST(SeccompRules, ThePagesRefusalsAreInEveryVariant) {
  for (int i = 0; i < kVariantCount; ++i) {
    auto names = syscalls_of(variant_from_index(i));
    for (const char* required :
         {"listen",      "unshare",     "setns",        "mount",         "clone",
          "clone3",      "ptrace",      "bpf",          "keyctl",        "add_key",
          "request_key", "init_module", "finit_module", "delete_module", "io_uring_setup",
          "socket",      "socketpair",  "ioctl",        "chmod",         "fchmod",
          "fchmodat",    "fchmodat2",   "open",         "openat",        "openat2",
          "creat",       "mkdir",       "mkdirat",      "mknod",         "mknodat"}) {
      EXPECT_EQ(names.count(required), 1U) << required << " in " << variant_from_index(i).name();
    }
  }
}

TEST(SeccompRules, PersonalityIsAHandCompiledAllowlist) {
  const auto lists = allowlists32();
  ASSERT_EQ(lists.size(), 2U);
  EXPECT_EQ(lists[0].syscall, "personality");
  EXPECT_EQ(lists[0].syscall_number_x86_64, SYS_personality);
  EXPECT_EQ(describe(lists[0]), "arg0 & 0xffffffff not in {0xffffffff, 0x0, 0x8}");
  // Session 14's attack reviews: a nested Landlock domain only with LOG_NEW_EXEC_ON alone.
  EXPECT_EQ(lists[1].syscall, "landlock_restrict_self");
  EXPECT_EQ(lists[1].syscall_number_x86_64, 446);
  EXPECT_EQ(describe(lists[1]), "arg1 & 0xffffffff not in {0x2}");
  for (int i = 0; i < kVariantCount; ++i) {
    for (const auto& list : lists) {
      EXPECT_EQ(syscalls_of(variant_from_index(i)).count(list.syscall), 0U)
          << list.syscall << " is not a libseccomp rule";
    }
  }
}

TEST(SeccompRules, FastOpenIsRefusedOnlyWhereInetSocketsExist) {
  EXPECT_EQ(syscalls_of(FilterVariant{false, false}).count("sendto"), 0U);
  EXPECT_EQ(syscalls_of(FilterVariant{true, false}).count("sendto"), 1U);
  EXPECT_EQ(syscalls_of(FilterVariant{true, true}).count("sendmsg"), 1U);
}

TEST(SeccompRules, SocketIsRefusedOutrightWithoutAnyFamily) {
  for (const auto& rule : rules_for(FilterVariant{false, false})) {
    if (rule.syscall == "socket") {
      EXPECT_TRUE(rule.args.empty());
      EXPECT_EQ(rule.errno_value, EAFNOSUPPORT);
    }
  }
}

TEST(SeccompRules, AllowedFamiliesAreNeverRefused) {
  for (int i = 0; i < kVariantCount; ++i) {
    const auto variant = variant_from_index(i);
    for (const auto& rule : rules_for(variant)) {
      if (rule.syscall != "socket" || rule.args.size() != 1) continue;
      const auto& check = rule.args[0];
      if (check.op != Compare::Equal) continue;
      if (variant.unix_sockets) {
        EXPECT_NE(check.value, static_cast<std::uint64_t>(AF_UNIX));
      }
      if (variant.inet) {
        EXPECT_NE(check.value, static_cast<std::uint64_t>(AF_INET));
        EXPECT_NE(check.value, static_cast<std::uint64_t>(AF_INET6));
      }
    }
  }
}

// --- The built-in programs, run on seccomp_data as the kernel would run them. ---------------

// The programs run on seccomp_data by the project's own interpreter (plan/seccomp_eval.hpp,
// the one sandbox-run's supervisor uses): an instruction it cannot read, or a jump or load out
// of range, answers SECCOMP_RET_KILL_PROCESS, never "allow".
std::uint32_t run(const Program& program, long nr, const std::array<std::uint64_t, 6>& args,
                  std::uint32_t arch = AUDIT_ARCH_X86_64) {
  seccomp_data data{};
  data.nr = static_cast<int>(nr);
  data.arch = arch;
  for (std::size_t i = 0; i < 6; ++i) data.args[i] = args[i];
  return seccomp::evaluate(program.instructions, program.length, data);
}

constexpr std::uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr std::uint32_t refused(int err) {
  return SECCOMP_RET_ERRNO | static_cast<std::uint32_t>(err);
}

TEST(SeccompPrograms, ControlsAreAllowedAndForeignAbisKilled) {
  for (int i = 0; i < kVariantCount; ++i) {
    SCOPED_TRACE(variant_from_index(i).name());
    EXPECT_EQ(run(kPrograms[i], SYS_getpid, {}), kAllow);
    EXPECT_EQ(run(kPrograms[i], SYS_ioctl, {0, TCGETS}), kAllow);
    EXPECT_EQ(run(kPrograms[i], 20, {}, AUDIT_ARCH_I386), SECCOMP_RET_KILL_PROCESS);
    // i386's sysfs shares personality's x86-64 number: still killed, not answered EPERM.
    EXPECT_EQ(run(kPrograms[i], SYS_personality, {0x400000}, AUDIT_ARCH_I386),
              SECCOMP_RET_KILL_PROCESS);
  }
}

// Issue 12: a memfd is executable unless sealed (Landlock does not cover it): memfd_create is
// answered ENOSYS without MFD_NOEXEC_SEAL (8), whatever the other flags.
TEST(SeccompPrograms, MemfdOnlyWithTheNoexecSeal) {
  for (int i = 0; i < kVariantCount; ++i) {
    SCOPED_TRACE(variant_from_index(i).name());
    const auto& p = kPrograms[i];
    for (std::uint64_t flags : {0x0ULL, 0x1ULL /* MFD_CLOEXEC */, 0x3ULL, 0x10ULL /* MFD_EXEC */,
                                0x7ULL, 0xfffffff7ULL}) {
      EXPECT_EQ(run(p, SYS_memfd_create, {0, flags}), refused(ENOSYS)) << std::hex << flags;
    }
    for (std::uint64_t flags : {0x8ULL, 0x9ULL, 0xbULL, 0xffffffffULL}) {
      EXPECT_EQ(run(p, SYS_memfd_create, {0, flags}), kAllow) << std::hex << flags;
    }
  }
}

TEST(SeccompPrograms, PersonalityOnlyQueriesAndPlainLinux) {
  for (int i = 0; i < kVariantCount; ++i) {
    SCOPED_TRACE(variant_from_index(i).name());
    const auto& p = kPrograms[i];
    EXPECT_EQ(run(p, SYS_personality, {0xffffffff}), kAllow);
    EXPECT_EQ(run(p, SYS_personality, {0xffffffffffffffff}), kAllow);  // the kernel reads 32 bits
    EXPECT_EQ(run(p, SYS_personality, {0x0}), kAllow);                 // PER_LINUX
    EXPECT_EQ(run(p, SYS_personality, {0x8}), kAllow);                 // PER_LINUX32
    for (std::uint64_t bad :
         {0x0040000ULL /* ADDR_NO_RANDOMIZE */, 0x0400000ULL /* READ_IMPLIES_EXEC */,
          0xffffffff00040000ULL, 0xffffffff00400000ULL, 0x0040008ULL, 0xfffffffeULL, 0x7fffffffULL,
          0x1ULL, 0x4000000ULL /* UNAME26 */}) {
      EXPECT_EQ(run(p, SYS_personality, {bad}), refused(EPERM)) << std::hex << bad;
    }
  }
}

TEST(SeccompPrograms, TerminalAndConsoleIoctlsOnTheirLow32Bits) {
  for (int i = 0; i < kVariantCount; ++i) {
    SCOPED_TRACE(variant_from_index(i).name());
    const auto& p = kPrograms[i];
    for (std::uint64_t command :
         {std::uint64_t{TIOCSTI}, std::uint64_t{TIOCLINUX}, std::uint64_t{TIOCSPGRP},
          std::uint64_t{TIOCSETD}, std::uint64_t{TIOCCONS}, std::uint64_t{TIOCNOTTY},
          std::uint64_t{TIOCSCTTY}, std::uint64_t{TIOCEXCL}, std::uint64_t{TIOCNXCL},
          std::uint64_t{TIOCVHANGUP}, std::uint64_t{0x4B33} /* KDGKBTYPE */,
          std::uint64_t{0x4B3A} /* KDSETMODE */, std::uint64_t{0x4B00}, std::uint64_t{0x4BFF},
          std::uint64_t{0x5606} /* VT_ACTIVATE */, std::uint64_t{0x5600}, std::uint64_t{0x56FF}}) {
      if ((command == TIOCSCTTY || command == TIOCSPGRP) && variant_from_index(i).own_group) {
        // Its own pty as its controlling terminal (`script`), and its foreground group (bash's
        // `fg`): ModuleWorldAllowances.
        EXPECT_EQ(run(p, SYS_ioctl, {0, command}), kAllow);
        EXPECT_EQ(run(p, SYS_ioctl, {0, 0xffffffff00000000ULL | command}), kAllow);
        continue;
      }
      EXPECT_EQ(run(p, SYS_ioctl, {0, command}), refused(EPERM)) << std::hex << command;
      EXPECT_EQ(run(p, SYS_ioctl, {0, 0xffffffff00000000ULL | command}), refused(EPERM))
          << std::hex << command;
    }
    for (std::uint64_t command :
         {std::uint64_t{TCGETS}, std::uint64_t{TCSETS}, std::uint64_t{TIOCGWINSZ},
          std::uint64_t{FIONREAD}, std::uint64_t{TIOCGPGRP},
          std::uint64_t{0xC0585609} /* VIDIOC_QBUF-like _IOWR('V', ...) */,
          std::uint64_t{0x80044B00} /* _IOR('K', 0, int) */, std::uint64_t{0x4A00},
          std::uint64_t{0x5700}}) {
      EXPECT_EQ(run(p, SYS_ioctl, {0, command}), kAllow) << std::hex << command;
    }
  }
}

// Issue 12: what each part of the module's own world allows, and that nothing else moves.
TEST(SeccompPrograms, ModuleWorldAllowances) {
  for (int i = 0; i < kVariantCount; ++i) {
    const auto variant = variant_from_index(i);
    SCOPED_TRACE(variant.name());
    const auto& p = kPrograms[i];
    // Its own IPC namespace: SysV IPC and POSIX message queues.
    for (long nr : {SYS_shmget, SYS_shmat, SYS_semget, SYS_semop, SYS_semtimedop, SYS_msgget,
                    SYS_msgsnd, SYS_msgrcv, SYS_mq_open, SYS_mq_timedsend, SYS_mq_unlink}) {
      EXPECT_EQ(run(p, static_cast<int>(nr), {}), variant.own_namespaces ? kAllow : refused(EPERM))
          << nr;
    }
    // Its own network namespace: netlink, NETLINK_ROUTE (0) and NETLINK_SOCK_DIAG (4) only.
    const std::uint32_t no_family = refused(EAFNOSUPPORT);
    EXPECT_EQ(run(p, SYS_socket, {AF_NETLINK, SOCK_RAW, 0}),
              variant.own_namespaces ? kAllow : no_family);
    EXPECT_EQ(run(p, SYS_socket, {AF_NETLINK, SOCK_DGRAM, 4}),
              variant.own_namespaces ? kAllow : no_family);
    for (std::uint64_t protocol : {1ULL /* unused */, 9ULL /* AUDIT */, 15ULL /* KOBJECT_UEVENT */,
                                   31ULL, 32ULL, 0x100000000ULL}) {
      EXPECT_EQ(run(p, SYS_socket, {AF_NETLINK, SOCK_DGRAM, protocol}),
                variant.own_namespaces ? refused(EPROTONOSUPPORT) : no_family)
          << protocol;
    }
    // Other families are as the policy says, whatever the world.
    EXPECT_EQ(run(p, SYS_socket, {AF_PACKET, SOCK_RAW, 0}), no_family);
    // Its own user: by pid.
    const std::uint32_t same_user = variant.own_user ? kAllow : refused(EPERM);
    EXPECT_EQ(run(p, SYS_prlimit64, {1234, RLIMIT_NOFILE, 0, 0x1000}), same_user);
    EXPECT_EQ(run(p, SYS_sched_setaffinity, {1234, 8, 0x1000}), same_user);
    EXPECT_EQ(run(p, SYS_setpriority, {0 /* PRIO_PROCESS */, 1234, 5}), same_user);
    // The idle class (3 << 13, level 7): session 15's review refuses every other class.
    EXPECT_EQ(run(p, SYS_ioprio_set, {1 /* IOPRIO_WHO_PROCESS */, 1234, 0x6007}), same_user);
    EXPECT_EQ(run(p, SYS_ioprio_set, {1, 0, 0x6007}), kAllow);
    for (std::uint64_t ioprio : {0x0ULL /* none */, 0x2000ULL /* real time */,
                                 0x4000ULL /* best effort, level 0 */, 0x4007ULL, 0x14000ULL}) {
      EXPECT_EQ(run(p, SYS_ioprio_set, {1, 0, ioprio}), refused(EPERM)) << ioprio;
    }
    // inotify: its own instances, and every watch refused here (EPERM), which the notifying
    // program hands to the supervisor to add on what the module's uid owns (session 11's
    // attack review: a watch is not Landlock's, and every uid can read /tmp, /usr/bin).
    EXPECT_EQ(run(p, SYS_inotify_init1, {0}), variant.own_user ? kAllow : refused(ENOSYS));
    EXPECT_EQ(run(p, SYS_inotify_add_watch, {3, 0, 0}), refused(EPERM));
    // Still refused in every variant: a process group or a whole user at once; fanotify.
    EXPECT_EQ(run(p, SYS_setpriority, {1 /* PRIO_PGRP */, 0, 5}), refused(EPERM));
    EXPECT_EQ(run(p, SYS_setpriority, {2 /* PRIO_USER */, 0, 5}), refused(EPERM));
    EXPECT_EQ(run(p, SYS_ioprio_set, {3 /* IOPRIO_WHO_USER */, 0, 0}), refused(EPERM));
    EXPECT_EQ(run(p, SYS_fanotify_init, {0, 0}), refused(EPERM));
    // Its own process groups (a leaf, its own terminal).
    const std::uint32_t group = variant.own_group ? kAllow : refused(EPERM);
    EXPECT_EQ(run(p, SYS_setsid, {}), group);
    EXPECT_EQ(run(p, SYS_setpgid, {0, 0}), group);
    // Namespaces and mounts stay refused: nothing of the world can be undone or widened.
    EXPECT_EQ(run(p, SYS_unshare, {CLONE_NEWIPC}), refused(EPERM));
    EXPECT_EQ(run(p, SYS_setns, {3, 0}), refused(EPERM));
    EXPECT_EQ(run(p, SYS_mount, {0, 0, 0, 0, 0}), refused(EPERM));
  }
}

TEST(SeccompRules, EveryRefusalOfTheSharedWorldKeepsItsReason) {
  // A world variant drops rules; the ones it keeps say the same as in the shared variant.
  for (int i = 0; i < kVariantCount; ++i) {
    const auto variant = variant_from_index(i);
    FilterVariant shared = variant;
    shared.own_namespaces = shared.own_user = shared.own_group = false;
    std::set<std::string> reasons;
    for (const auto& rule : rules_for(shared)) reasons.insert(rule.why);
    for (const auto& rule : rules_for(variant)) {
      if (variant.own_namespaces && rule.syscall == "socket") continue;  // netlink's own rules
      // The supervisor's to add under +own-user (supervise/inotify_watch.hpp), and said so.
      if (variant.own_user && rule.syscall == "inotify_add_watch") continue;
      EXPECT_EQ(reasons.count(rule.why), 1U) << variant.name() << ": " << rule.why;
    }
  }
}

TEST(SeccompPrograms, SetuidAndSetgidModesRefusedEveryRoute) {
  constexpr std::uint64_t kTmpfile = 020000000 | O_DIRECTORY;
  for (int i = 0; i < kVariantCount; ++i) {
    SCOPED_TRACE(variant_from_index(i).name());
    const auto& p = kPrograms[i];
    for (std::uint64_t bit : {std::uint64_t{S_ISUID}, std::uint64_t{S_ISGID}}) {
      SCOPED_TRACE(bit);
      const std::uint64_t mode = 0755 | bit;
      const std::uint64_t high = 0xffffffff00000000ULL | mode;  // upper half ignored
      for (std::uint64_t m : {mode, high}) {
        EXPECT_EQ(run(p, SYS_chmod, {0, m}), refused(EPERM));
        EXPECT_EQ(run(p, SYS_fchmod, {3, m}), refused(EPERM));
        EXPECT_EQ(run(p, SYS_fchmodat, {3, 0, m}), refused(EPERM));
        EXPECT_EQ(run(p, 452 /* fchmodat2 */, {3, 0, m, 0}), refused(EPERM));
        EXPECT_EQ(run(p, SYS_mkdir, {0, m}), refused(EPERM));
        EXPECT_EQ(run(p, SYS_mkdirat, {3, 0, m}), refused(EPERM));
        EXPECT_EQ(run(p, SYS_mknod, {0, S_IFREG | m, 0}), refused(EPERM));
        EXPECT_EQ(run(p, SYS_mknodat, {3, 0, S_IFREG | m, 0}), refused(EPERM));
        EXPECT_EQ(run(p, SYS_creat, {0, m}), refused(EPERM));
        for (std::uint64_t flags : {std::uint64_t{O_WRONLY | O_CREAT},
                                    std::uint64_t{O_RDWR | O_CREAT | O_EXCL}, kTmpfile | O_RDWR}) {
          EXPECT_EQ(run(p, SYS_open, {0, flags, m}), refused(EPERM)) << flags;
          EXPECT_EQ(run(p, SYS_openat, {3, 0, flags, m}), refused(EPERM)) << flags;
        }
        // Without O_CREAT or O_TMPFILE the kernel ignores the mode.
        EXPECT_EQ(run(p, SYS_openat, {3, 0, O_RDONLY, m}), kAllow);
        EXPECT_EQ(run(p, SYS_open, {0, O_RDWR | O_DIRECTORY, m}), kAllow);
      }
    }
    // The plain modes stay.
    EXPECT_EQ(run(p, SYS_chmod, {0, 0755}), kAllow);
    EXPECT_EQ(run(p, SYS_chmod, {0, 01777}), kAllow);  // sticky is not setuid
    EXPECT_EQ(run(p, SYS_fchmod, {3, 0644}), kAllow);
    EXPECT_EQ(run(p, SYS_fchmodat, {3, 0, 0700}), kAllow);
    EXPECT_EQ(run(p, 452, {3, 0, 0700, 0}), kAllow);
    EXPECT_EQ(run(p, SYS_mkdir, {0, 0755}), kAllow);
    EXPECT_EQ(run(p, SYS_mkdirat, {3, 0, 0777}), kAllow);
    EXPECT_EQ(run(p, SYS_mknodat, {3, 0, S_IFIFO | 0644, 0}), kAllow);
    EXPECT_EQ(run(p, SYS_creat, {0, 0644}), kAllow);
    EXPECT_EQ(run(p, SYS_openat, {3, 0, O_WRONLY | O_CREAT | O_TRUNC, 0644}), kAllow);
    EXPECT_EQ(run(p, SYS_open, {0, O_WRONLY | O_CREAT, 0666}), kAllow);
    EXPECT_EQ(run(p, SYS_openat, {3, 0, kTmpfile | O_RDWR, 0600}), kAllow);
    EXPECT_EQ(run(p, SYS_openat2, {3, 0, 0, 24}), refused(ENOSYS));
  }
}

TEST(SeccompPrograms, UnixDatagramPairsOnlyWithTheBrokerGrant) {
  for (int i = 0; i < kVariantCount; ++i) {
    const auto variant = variant_from_index(i);
    SCOPED_TRACE(variant.name());
    const auto& p = kPrograms[i];
    for (std::uint64_t type : {std::uint64_t{SOCK_STREAM}, std::uint64_t{SOCK_SEQPACKET},
                               std::uint64_t{SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK},
                               std::uint64_t{SOCK_SEQPACKET | SOCK_CLOEXEC}}) {
      EXPECT_EQ(run(p, SYS_socketpair, {AF_UNIX, type, 0, 0}), kAllow) << type;
    }
    for (std::uint64_t type : {std::uint64_t{SOCK_DGRAM}, std::uint64_t{SOCK_RAW},
                               std::uint64_t{SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK},
                               std::uint64_t{SOCK_RDM}, std::uint64_t{0}}) {
      EXPECT_EQ(run(p, SYS_socketpair, {AF_UNIX, type, 0, 0}),
                variant.unix_sockets ? kAllow : refused(EPROTONOSUPPORT))
          << type;
    }
  }
}

// --- The compacted rules (plan/seccomp_compact.hpp) -------------------------------------------

TEST(SeccompCompact, NotInASetBecomesItsBlocks) {
  std::vector<Rule> rules;
  refuse_unless_in(rules, "socketpair", 0, {AF_UNIX}, 45, EAFNOSUPPORT, {}, "why");
  ASSERT_EQ(rules.size(), 46U);
  const auto compact = compact_rules(rules);
  ASSERT_EQ(compact.size(), 2U);
  EXPECT_EQ(compact[0].args, (std::vector<ArgCheck>{{0, Compare::Equal, 0, 0}}));
  EXPECT_EQ(compact[1].args, (std::vector<ArgCheck>{{0, Compare::Greater, 1, 0}}));
  EXPECT_EQ(compact[1].why, "why");

  // Under a low-bits mask: {0, 2..4, 6..15} of 0xf is {0}, {2,3}, {4}, {6,7}, {8..15}.
  std::vector<Rule> types;
  for (std::uint64_t t = 0; t <= 15; ++t) {
    if (t == 1 || t == 5) continue;
    types.push_back(Rule{"socketpair",
                         -1,
                         EPROTONOSUPPORT,
                         {{0, Compare::Equal, AF_UNIX, 0}, {1, Compare::MaskedEqual, t, 0xf}},
                         "why"});
  }
  const auto blocks = compact_rules(types);
  ASSERT_EQ(blocks.size(), 5U);
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> want{
      {0, 0xf}, {2, 0xe}, {4, 0xf}, {6, 0xe}, {8, 0x8}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(blocks[i].args.size(), 2U);
    EXPECT_EQ(blocks[i].args[0], (ArgCheck{0, Compare::Equal, AF_UNIX, 0}));
    EXPECT_EQ(blocks[i].args[1], (ArgCheck{1, Compare::MaskedEqual, want[i].first, want[i].second}))
        << i;
  }

  // Nothing allowed below the threshold: the argument no longer matters.
  std::vector<Rule> all;
  refuse_unless_in(all, "socket", 2, {}, 31, EPROTONOSUPPORT, {{0, Compare::Equal, AF_NETLINK, 0}},
                   "why");
  const auto whole = compact_rules(all);
  ASSERT_EQ(whole.size(), 1U);
  EXPECT_EQ(whole[0].args, (std::vector<ArgCheck>{{0, Compare::Equal, AF_NETLINK, 0}}));

  // "Greater than" the largest value refuses nothing: it joins no group (its interval would
  // start past the top and wrap to "everything").
  std::vector<Rule> never{Rule{"bind", -1, EPERM, {{1, Compare::Equal, 5, 0}}, "w"},
                          Rule{"bind", -1, EPERM, {{1, Compare::Equal, 6, 0}}, "w"},
                          Rule{"bind", -1, EPERM, {{1, Compare::Equal, 7, 0}}, "w"},
                          Rule{"bind", -1, EPERM, {{1, Compare::Greater, ~0ULL, 0}}, "w"}};
  const auto bounded = compact_rules(never);
  ASSERT_EQ(bounded.size(), 3U);
  for (const auto& rule : bounded) EXPECT_FALSE(rule.args.empty());
  EXPECT_EQ(bounded[0].args, (std::vector<ArgCheck>{{1, Compare::Equal, 5, 0}}));
  EXPECT_EQ(bounded[1].args, (std::vector<ArgCheck>{{1, Compare::MaskedEqual, 6, ~1ULL}}));

  // A single bit's mask (the set-id mode rules) and lone rules stay as they are.
  std::vector<Rule> modes{Rule{"chmod", -1, EPERM, {{1, Compare::MaskedEqual, 04000, 04000}}, "w"},
                          Rule{"chmod", -1, EPERM, {{1, Compare::MaskedEqual, 02000, 02000}}, "w"},
                          Rule{"listen", -1, EPERM, {}, "w"}};
  const auto kept = compact_rules(modes);
  ASSERT_EQ(kept.size(), 3U);
  EXPECT_EQ(kept[0].args, modes[0].args);
  EXPECT_EQ(kept[1].args, modes[1].args);
}

// The compacted program of every variant answers every probe exactly as the table's own rules
// compiled one by one do. For each syscall whose rules the compaction rewrote: each argument
// alone over small values, the values around the masks and thresholds and high-bit garbage, and
// the first argument paired with each other one (socketpair's family and type, netlink's
// protocol). Every other rule's syscall: each argument alone over a few values.
TEST(SeccompCompact, CompactedProgramsAnswerEveryProbeAsTheTableDoes) {
  std::vector<std::uint64_t> probes;
  for (std::uint64_t v = 0; v <= 70; ++v) probes.push_back(v);
  for (std::uint64_t v :
       {0xffULL,        0x100ULL,       0x101ULL,       0x4b00ULL,      0x5401ULL,
        0x5412ULL,      0x541cULL,      0x541dULL,      0x5422ULL,      0x5423ULL,
        0x5437ULL,      0x5600ULL,      0x7fffffffULL,  0x80000000ULL,  0xffffffffULL,
        0x100000000ULL, 0x100000001ULL, 0x10000000aULL, 0x100000010ULL, ~0ULL,
        ~0ULL - 1}) {
    probes.push_back(v);
  }
  const std::vector<std::uint64_t> firsts{0,        AF_UNIX,    AF_INET,
                                          AF_INET6, AF_NETLINK, 0x100000001ULL};
  const std::vector<std::uint64_t> few{0, 1, 2, 0x5401, 0x100000001ULL, ~0ULL};
  for (int i = 0; i < kVariantCount; ++i) {
    const FilterVariant variant = variant_from_index(i);
    const auto table = rules_for(variant);
    std::set<int> numbers;
    for (const auto& rule : table) numbers.insert(syscall_number(rule));
    // The syscalls whose rules compact_rules wrote otherwise.
    std::map<int, std::vector<std::vector<ArgCheck>>> before, after;
    for (const auto& rule : table) before[syscall_number(rule)].push_back(rule.args);
    for (const auto& rule : compact_rules(table)) after[syscall_number(rule)].push_back(rule.args);
    std::set<int> rewritten;
    for (int nr : numbers) {
      if (before[nr] != after[nr]) rewritten.insert(nr);
    }
    EXPECT_FALSE(rewritten.empty()) << variant.name();
    // And, for those, every value their rules compare (the ioctl commands too) and its
    // neighbours, each also with high bits set: the edges of every block.
    std::map<int, std::vector<std::uint64_t>> edges;
    for (const auto& rule : table) {
      const int nr = syscall_number(rule);
      if (rewritten.count(nr) == 0 || rule.args.empty()) continue;
      const std::uint64_t v = rule.args.back().value;
      for (std::uint64_t near : {v - 1, v, v + 1}) {
        for (std::uint64_t high : {0ULL, 1ULL << 32, 0xffffffff00000000ULL}) {
          edges[nr].push_back(near | high);
        }
      }
    }
    for (auto refusal : {Refusal::Errno, Refusal::Notify}) {
      const auto compact = compile(variant, refusal);
      const auto plain = compile_rules(table, refusal);
      EXPECT_LT(compact.size(), plain.size()) << variant.name();
      auto agree = [&](int nr, const std::array<std::uint64_t, 6>& args) {
        seccomp_data data{};
        data.nr = nr;
        data.arch = AUDIT_ARCH_X86_64;
        for (std::size_t a = 0; a < 6; ++a) data.args[a] = args[a];
        return seccomp::evaluate(compact.data(), compact.size(), data) ==
               seccomp::evaluate(plain.data(), plain.size(), data);
      };
      for (int nr : numbers) {
        const bool whole_grid = rewritten.count(nr) != 0;
        std::vector<std::uint64_t> values = whole_grid ? probes : few;
        values.insert(values.end(), edges[nr].begin(), edges[nr].end());
        for (std::size_t a = 0; a < 6; ++a) {
          for (std::uint64_t v : values) {
            std::array<std::uint64_t, 6> args{};
            args[a] = v;
            ASSERT_TRUE(agree(nr, args))
                << variant.name() << " nr " << nr << " arg" << a << " " << v;
          }
        }
        if (!whole_grid) continue;
        for (std::uint64_t first : firsts) {
          for (std::size_t a = 1; a < 6; ++a) {
            for (std::uint64_t v : values) {
              std::array<std::uint64_t, 6> args{};
              args[0] = first;
              args[a] = v;
              ASSERT_TRUE(agree(nr, args))
                  << variant.name() << " nr " << nr << " arg0 " << first << " arg" << a << " " << v;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace oarbank::seccomp
