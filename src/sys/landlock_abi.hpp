// The Landlock kernel interface: constants and raw calls.
//
// Landlock has no C library. Debian 12's kernel headers (linux-libc-dev 6.1) stop at ABI 2, so
// the constants of later ABIs are defined here, once, each guarded so that newer headers win.
#pragma once

#include <linux/landlock.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

// ABI 3 (Linux 6.2): truncate(2), ftruncate(2), open(O_TRUNC).
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
// ABI 5 (Linux 6.10): ioctl(2) on character and block devices opened after the ruleset.
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
// ABI 4 (Linux 6.7): TCP bind(2) and connect(2) by port.
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
// ABI 6 (Linux 6.12): IPC scopes.
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
// ABI 7 (Linux 6.15): landlock_restrict_self's logging flags. Denials are logged to audit for
// the process that restricted itself until it execs; after the exec only with NEW_EXEC_ON
// (sandbox-run asks for it when it reads the audit log, docs/denials.md).
#ifndef LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON
#define LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON (1U << 1)
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

namespace oarbank::landlock {

// The Landlock ABIs by name, each with the first Linux release that answers it to
// LANDLOCK_CREATE_RULESET_VERSION (as rust-landlock's compat.rs names them). The kernel's ABI
// is a plain number (features.landlock_abi, the plan's abi): compare it with supports(), never
// with a literal.
enum class Abi : int {
  Unsupported = 0,  // no Landlock: not built (ENOSYS) or not enabled at boot (EOPNOTSUPP)
  V1 = 1,           // Linux 5.13: filesystem access rights
  V2 = 2,           // Linux 5.19: refer (link and rename across directories)
  V3 = 3,           // Linux 6.2: truncate
  V4 = 4,           // Linux 6.7: TCP bind and connect by port
  V5 = 5,           // Linux 6.10: ioctl on character and block devices
  V6 = 6,           // Linux 6.12: scopes (abstract unix sockets, signals)
  V7 = 7,           // Linux 6.15: restrict_self's audit logging flags
};
// The newest ABI this build knows; a newer kernel is used at this ABI.
inline constexpr Abi kNewestKnownAbi = Abi::V7;

constexpr int number(Abi abi) { return static_cast<int>(abi); }
// True when a kernel (or a plan) at ABI `abi` has what `needed` brought.
constexpr bool supports(int abi, Abi needed) { return abi >= number(needed); }

// "Linux 6.7" for ABI 4, and so on; "Linux ?" for a number this build does not know.
constexpr const char* linux_release(int abi) {
  switch (abi) {
    case number(Abi::V1):
      return "Linux 5.13";
    case number(Abi::V2):
      return "Linux 5.19";
    case number(Abi::V3):
      return "Linux 6.2";
    case number(Abi::V4):
      return "Linux 6.7";
    case number(Abi::V5):
      return "Linux 6.10";
    case number(Abi::V6):
      return "Linux 6.12";
    case number(Abi::V7):
      return "Linux 6.15";
    default:
      return "Linux ?";
  }
}
constexpr const char* linux_release(Abi abi) { return linux_release(number(abi)); }

// LANDLOCK_RULE_NET_PORT (ABI 4) is an enumerator of the kernel's enum landlock_rule_type,
// which Debian 12's header lacks; its value is fixed by the kernel ABI.
inline constexpr int kRuleNetPort = 2;
inline constexpr int kRulePathBeneath = 1;

// The kernel's struct landlock_ruleset_attr as of ABI 6. Its size tells the kernel which
// fields exist: pass only the prefix the running ABI knows (older kernels answer E2BIG to
// a longer struct with non-zero tail fields).
struct RulesetAttr {
  std::uint64_t handled_access_fs = 0;
  std::uint64_t handled_access_net = 0;  // ABI 4
  std::uint64_t scoped = 0;              // ABI 6
};
inline constexpr std::size_t ruleset_attr_size(int abi) {
  if (supports(abi, Abi::V6)) return sizeof(RulesetAttr);
  if (supports(abi, Abi::V4)) return offsetof(RulesetAttr, scoped);
  return offsetof(RulesetAttr, handled_access_net);
}

struct __attribute__((packed)) PathBeneathAttr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};

struct NetPortAttr {
  std::uint64_t allowed_access;
  std::uint64_t port;
};

inline int create_ruleset(const RulesetAttr* attr, std::size_t size, std::uint32_t flags) {
  return static_cast<int>(::syscall(SYS_landlock_create_ruleset, attr, size, flags));
}
inline int add_rule(int ruleset_fd, int rule_type, const void* rule_attr, std::uint32_t flags) {
  return static_cast<int>(
      ::syscall(SYS_landlock_add_rule, ruleset_fd, rule_type, rule_attr, flags));
}
inline int restrict_self(int ruleset_fd, std::uint32_t flags) {
  return static_cast<int>(::syscall(SYS_landlock_restrict_self, ruleset_fd, flags));
}

}  // namespace oarbank::landlock
