// The module's seccomp filter as data: every rule with the reason it exists. The same table
// feeds the build-time compiler (tools/filtergen.cpp, through libseccomp) and --explain.
//
// The filter allows by default and refuses the listed routes; the reasoning for each route,
// and the other routes to the same effect that are closed with it, is in docs/seccomp.md.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "oarbank/policy.hpp"

namespace oarbank::seccomp {

// The policy switches the filter depends on, and what of the module's world sandbox-run made
// its own (issue 12, docs/seccomp.md "What the world lets us allow"). Each combination is
// compiled once, at build time.
struct FilterVariant {
  bool inet = false;          // IPv4 and IPv6 sockets (net is not "none")
  bool unix_sockets = false;  // the broker grant
  // Its own IPC and network namespaces (root sandbox-run): SysV IPC and POSIX message queues
  // are the module's alone, and NETLINK_ROUTE sees only its own loopback.
  bool own_namespaces = false;
  // A uid no other module or process has (issue 12's uid registry leases one): the kernel's
  // same-user checks confine prlimit64, sched_*, setpriority and ioprio_set by pid to it.
  bool own_user = false;
  // A cgroup leaf as its container and no terminal but its own: leaving its process group
  // (setsid, setpgid) no longer escapes teardown, and TIOCSCTTY and TIOCSPGRP (a shell's job
  // control) reach only its own pty.
  bool own_group = false;
  [[nodiscard]] int index() const {
    return (own_group ? 16 : 0) | (own_user ? 8 : 0) | (own_namespaces ? 4 : 0) | (inet ? 2 : 0) |
           (unix_sockets ? 1 : 0);
  }
  [[nodiscard]] std::string name() const;
  friend bool operator==(const FilterVariant&, const FilterVariant&) = default;
};
inline constexpr int kVariantCount = 32;
FilterVariant variant_from_index(int index);

// What sandbox-run made the module's own, for the filter (all false: sandbox-exec, an
// unprivileged sandbox-run, or a root one that did not make it). Filled by the module run
// (supervise/module_run.cpp) before the plan is made; the plan copies it into the variant.
struct ModuleWorld {
  bool own_namespaces = false;
  bool own_user = false;
  bool own_group = false;
  friend bool operator==(const ModuleWorld&, const ModuleWorld&) = default;
};
FilterVariant variant_for(const Policy& policy, const ModuleWorld& world = {});

enum class Compare { Equal, Greater, MaskedEqual };

struct ArgCheck {
  unsigned arg = 0;  // 0-based syscall argument
  Compare op = Compare::Equal;
  std::uint64_t value = 0;
  std::uint64_t mask = 0;  // MaskedEqual only: (arg & mask) == value
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 sees a literal 0 in the defaulted <=>.
  friend auto operator<=>(const ArgCheck&, const ArgCheck&) = default;
};

struct Rule {
  std::string syscall;             // name as libseccomp knows it
  int syscall_number_x86_64 = -1;  // for syscalls newer than Debian 12's libseccomp knows
  int errno_value = 0;             // the refusal's errno
  std::vector<ArgCheck> args;      // all must hold (AND)
  std::string why;
  // Answered in the kernel under sandbox-run too, not recorded (seccomp_compile.hpp): a refusal
  // a program falls back from without noticing, which `ls -l` would otherwise record per file.
  bool quiet = false;
  // An ENOSYS refusal the supervisor records all the same: a rare call that programs do not
  // fall back from (Python's os.memfd_create raises), unlike clone3's or openat2's.
  bool recorded = false;
};

// Syscall numbers above this one are refused with ENOSYS before any other rule: a syscall
// added by a later kernel has not been reviewed here, and may be a new route around a rule
// (as io_uring was for socket). Programs treat ENOSYS as "this kernel is too old" and fall
// back. 469 is file_setattr (Linux 6.17), the newest syscall reviewed for x86_64.
inline constexpr std::uint32_t kHighestReviewedSyscallX86_64 = 469;

std::vector<Rule> rules_for(const FilterVariant& variant);

// For the mechanisms' contributions (plan/mechanism.hpp's socket_rules).
// The kernel reads a socket's type as type & SOCK_TYPE_MASK; SOCK_NONBLOCK and SOCK_CLOEXEC
// live above it.
inline constexpr std::uint64_t kSockTypeMask = 0xf;
// Refuses `syscall` with `err` unless argument `arg` is one of `allowed` (all values up to
// `highest`, then everything above it), where every check of `also` holds too.
void refuse_unless_in(std::vector<Rule>& rules, const std::string& syscall, unsigned arg,
                      const std::set<std::uint64_t>& allowed, std::uint64_t highest, int err,
                      const std::vector<ArgCheck>& also, const std::string& why);

// A refusal libseccomp cannot express: the syscall is refused unless argument `arg`, read as
// 32 bits as the kernel reads it, is one of `allowed`. libseccomp compares 64 bits, cannot
// compare one argument twice in a rule, and a deny list cannot say "except", so these are
// compiled by hand in front of libseccomp's program (seccomp_compile.cpp). The same in every
// variant.
struct Allowlist32 {
  std::string syscall;
  int syscall_number_x86_64 = -1;
  unsigned arg = 0;
  std::vector<std::uint32_t> allowed;
  int errno_value = 0;
  std::string why;
};
std::vector<Allowlist32> allowlists32();

std::string describe(const ArgCheck& check);
std::string describe(const Allowlist32& list);
std::string errno_name(int err);

}  // namespace oarbank::seccomp
