// A refusal turned into a denial: what was tried, decoded, and the policy element that would
// allow it, or the reason no policy can (docs/denials.md). Pure: the supervisor reads the
// call (supervise/denial_listener.cpp), this names it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "plan/denials.hpp"
#include "plan/seccomp_rules.hpp"

namespace oarbank {

// One call the filter refused, as the supervisor received it.
struct SeccompCall {
  std::string syscall;  // the rule's name for the number ("socket"); "syscall N" if unnamed
  std::array<std::uint64_t, 6> args{};
  std::string path;  // the path argument, read from the module's memory ("" when none or unread)
};

// The reason of the first rule of the variant (table order, as docs/seccomp.md lists them) that
// refuses this call with `err`; none when no rule does.
std::optional<std::string> seccomp_refusal_reason(const seccomp::FilterVariant& variant,
                                                  const SeccompCall& call, int err);

// Which argument of the syscall is a path worth reading for the record (-1: none). Only the
// calls a rule refuses that take one.
int seccomp_path_argument(std::string_view syscall);

// The denial for a refused call (mechanism, operation, object, error, reason, allowed_by);
// pid, executable and count are the caller's.
Denial seccomp_denial(const seccomp::FilterVariant& variant, const SeccompCall& call, int err);

// The denial of one line of the egress proxy's log (docs/proxy.md) that records a refusal
// ("event": "decision", "verdict": "refuse"); none for every other line.
std::optional<Denial> proxy_denial(std::string_view json_line);

// Names for the record.
std::string socket_family_name(std::uint64_t family);
std::string socket_type_name(std::uint64_t type);

}  // namespace oarbank
