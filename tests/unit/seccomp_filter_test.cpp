// The filter table and its compiled programs.
#include <gtest/gtest.h>
#include <linux/seccomp.h>
#include <sys/socket.h>

#include <set>

#include "apply/seccomp_programs.hpp"
#include "plan/seccomp_compile.hpp"
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
      EXPECT_NE(rule.errno_value, 0) << rule.syscall;
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
         {"listen", "unshare", "setns", "mount", "clone", "clone3", "ptrace", "bpf", "keyctl",
          "add_key", "request_key", "init_module", "finit_module", "delete_module",
          "io_uring_setup", "socket", "socketpair", "ioctl"}) {
      EXPECT_EQ(names.count(required), 1U) << required << " in " << variant_from_index(i).name();
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

}  // namespace
}  // namespace oarbank::seccomp
