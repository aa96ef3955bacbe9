#include "supervise/exec_verification.hpp"

#include <fmt/format.h>

namespace oarbank {
namespace {

template <typename T>
std::string shown(const std::optional<T>& value) {
  return value ? fmt::format("{}", *value) : std::string("missing");
}

}  // namespace

std::optional<std::string> exec_verification_problem(const ProcStatus& status,
                                                     const ExecExpectation& expected) {
  if (status.no_new_privs != 1)
    return "NoNewPrivs: " + shown(status.no_new_privs) + " (expected 1)";
  // 2 is SECCOMP_MODE_FILTER; 1 (strict) is not what the launcher sets either. 3 is
  // SECCOMP_MODE_DEAD (Linux 5.17): a filter's kill action set it on its way to killing the
  // process, so the filter was there (a module that makes an int 0x80 call at once is dead of
  // SIGSYS, not a launch that failed its verification: session 11's review saw exit 70).
  if (status.seccomp != 2 && status.seccomp != 3) {
    return "Seccomp: " + shown(status.seccomp) + " (expected 2)";
  }
  if (!status.seccomp_filters || *status.seccomp_filters <= expected.inherited_seccomp_filters) {
    return fmt::format("Seccomp_filters: {} (expected more than the {} sandbox-run has)",
                       shown(status.seccomp_filters), expected.inherited_seccomp_filters);
  }
  for (auto uid : {status.real_uid, status.effective_uid, status.saved_uid, status.fs_uid}) {
    if (uid != expected.uid) {
      return fmt::format("Uid: {} {} {} {} (expected {})", shown(status.real_uid),
                         shown(status.effective_uid), shown(status.saved_uid), shown(status.fs_uid),
                         expected.uid);
    }
  }
  if (status.real_gid != expected.gid || status.effective_gid != expected.gid) {
    return fmt::format("Gid: {} {} (expected {})", shown(status.real_gid),
                       shown(status.effective_gid), expected.gid);
  }
  const std::pair<const char*, const std::optional<std::uint64_t>*> sets[] = {
      {"CapInh", &status.cap_inh},
      {"CapPrm", &status.cap_prm},
      {"CapEff", &status.cap_eff},
      {"CapAmb", &status.cap_amb},
      {"CapBnd", &status.cap_bnd}};
  for (const auto& [name, value] : sets) {
    if (!expected.privileged_launch && std::string_view(name) == "CapBnd") continue;
    if (*value != std::uint64_t{0}) {
      return fmt::format("{}: {} (expected 0)", name,
                         *value ? fmt::format("{:016x}", **value) : std::string("missing"));
    }
  }
  if (expected.privileged_launch && !status.groups.empty()) {
    return "Groups: " + status.groups + " (expected none)";
  }
  return std::nullopt;
}

}  // namespace oarbank
