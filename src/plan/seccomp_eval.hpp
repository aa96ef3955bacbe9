// A classic BPF interpreter for seccomp programs: what the kernel answers for one call. Pure.
// sandbox-run's supervisor runs the errno program (sandbox-exec's, apply/seccomp_programs.hpp)
// on each call the notifying program handed it, and answers with exactly that errno, so a
// module sees the same refusals under sandbox-run as under sandbox-exec (docs/denials.md).
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cstddef>
#include <cstdint>

namespace oarbank::seccomp {

// The program's return value (SECCOMP_RET_*). An instruction a seccomp program may not hold,
// a jump or load out of range, or running off the end answer SECCOMP_RET_KILL_PROCESS: the
// caller treats anything but an errno as a refusal it answers EPERM (never "allow").
// `steps`, when given, receives how many instructions ran (bench and tests: the cost of a call).
std::uint32_t evaluate(const sock_filter* program, std::size_t length, const seccomp_data& data,
                       std::size_t* steps = nullptr);

}  // namespace oarbank::seccomp
