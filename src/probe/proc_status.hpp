// Parsing /proc/<pid>/status (pure): the fields the parent verifies after the module's exec.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace oarbank {

struct ProcStatus {
  std::optional<int> no_new_privs;     // NoNewPrivs
  std::optional<int> seccomp;          // Seccomp: 0 off, 1 strict, 2 filter
  std::optional<int> seccomp_filters;  // Seccomp_filters (Linux 5.9): how many are stacked
  std::optional<std::uint64_t> cap_inh, cap_prm, cap_eff, cap_bnd, cap_amb;
  std::optional<std::uint32_t> real_uid, effective_uid, saved_uid, fs_uid;
  std::optional<std::uint32_t> real_gid, effective_gid;
  std::string groups;  // the Groups: line, trimmed
};

ProcStatus parse_proc_status(std::string_view text);

}  // namespace oarbank
