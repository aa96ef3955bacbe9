// Compiles a filter variant with libseccomp into a classic BPF program. Used at build time
// (tools/filtergen.cpp) and by tests; the launcher itself never links libseccomp.
#pragma once

#include <linux/filter.h>

#include <cerrno>
#include <string>
#include <vector>

#include "plan/seccomp_rules.hpp"

namespace oarbank::seccomp {

// How the compiled program answers a refusal. Errno: SECCOMP_RET_ERRNO with the rule's errno
// (sandbox-exec). Notify (sandbox-run, docs/denials.md): SECCOMP_RET_USER_NOTIF for every rule
// that is not a quiet fallback, so that the supervisor answers with that same errno and records
// the denial; the quiet ones keep answering in the kernel and are not recorded: the ENOSYS rules
// ("this kernel lacks it": clone3, openat2, io_uring, inotify, memfd_secret; but memfd_create
// without MFD_NOEXEC_SEAL, marked recorded, which programs do not fall back from) and the rules
// marked quiet (extended attributes read by path and RWF_NOWAIT, EOPNOTSUPP: "this file system
// lacks it"; posix_fadvise's DONTNEED, answered 0: advice the kernel may ignore), refusals a
// program falls back from without noticing and that `ls -l` would otherwise record on every
// file. The ceiling answers ENOSYS too.
enum class Refusal { Errno, Notify };

// Whether a refusal with this errno goes to the supervisor in the Notify programs.
inline bool notified(int errno_value) { return errno_value != ENOSYS; }
// Whether the rule's refusal does.
inline bool notified(const Rule& rule) {
  return !rule.quiet && (rule.recorded || notified(rule.errno_value));
}

// The rule's syscall number on this architecture (libseccomp's, else the rule's own); -1 when
// neither knows it.
int syscall_number(const Rule& rule);

// The variant's rules (compacted: seccomp_compact.hpp) as one program. Throws
// std::runtime_error naming the rule libseccomp refused.
std::vector<sock_filter> compile(const FilterVariant& variant, Refusal refusal = Refusal::Errno);

// The given rules as one program, as they are (tests compare it with compile()).
std::vector<sock_filter> compile_rules(const std::vector<Rule>& rules,
                                       Refusal refusal = Refusal::Errno);

}  // namespace oarbank::seccomp
