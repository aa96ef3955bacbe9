// The filter variants compiled at build time (tools/filtergen.cpp).
#pragma once

#include <linux/filter.h>

#include <cstddef>

#include "plan/seccomp_rules.hpp"

namespace oarbank::seccomp {

struct Program {
  const sock_filter* instructions;
  std::size_t length;
};

// Refusals answered with the rule's errno by the kernel (sandbox-exec alone).
extern const Program kPrograms[kVariantCount];
// The same filters with the refusals handed to a listener (seccomp_compile.hpp, Refusal::Notify):
// sandbox-run's supervisor answers them with the same errno and records them (docs/denials.md).
extern const Program kNotifyPrograms[kVariantCount];

// Every syscall a rule names, by its x86-64 number, ascending.
struct SyscallName {
  int number;
  const char* name;
};
extern const SyscallName kRuleSyscalls[];
extern const std::size_t kRuleSyscallCount;

}  // namespace oarbank::seccomp
