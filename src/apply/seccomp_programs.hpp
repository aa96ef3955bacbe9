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

extern const Program kPrograms[kVariantCount];

}  // namespace oarbank::seccomp
