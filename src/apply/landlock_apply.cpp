#include "apply/landlock_apply.hpp"

#include <fmt/format.h>

#include <cerrno>

#include "sys/error.hpp"
#include "sys/landlock_abi.hpp"

namespace oarbank {

UniqueFd build_landlock_ruleset(const LandlockPlan& plan, const OpenedPaths& paths) {
  landlock::RulesetAttr attr;
  attr.handled_access_fs = plan.handled_fs;
  attr.handled_access_net = plan.handled_net;
  attr.scoped = plan.scoped;
  UniqueFd ruleset(landlock::create_ruleset(&attr, landlock::ruleset_attr_size(plan.abi), 0));
  if (!ruleset.valid()) {
    throw Error(ErrorKind::StepFailed,
                fmt::format("landlock: create_ruleset (ABI {}): {}", plan.abi, errno_text(errno)),
                errno);
  }
  for (const auto& rule : plan.path_rules) {
    landlock::PathBeneathAttr beneath{rule.access, paths.fd(rule.path)};
    if (rule.access == 0) continue;  // nothing to allow
    if (landlock::add_rule(ruleset.get(), landlock::kRulePathBeneath, &beneath, 0) != 0) {
      throw Error(ErrorKind::StepFailed,
                  fmt::format("landlock: rule {} ({}): {}", rule.path, rule.why, errno_text(errno)),
                  errno);
    }
  }
  for (const auto& rule : plan.port_rules) {
    landlock::NetPortAttr port{rule.access, rule.port};
    if (landlock::add_rule(ruleset.get(), landlock::kRuleNetPort, &port, 0) != 0) {
      throw Error(
          ErrorKind::StepFailed,
          fmt::format("landlock: rule port {} ({}): {}", rule.port, rule.why, errno_text(errno)),
          errno);
    }
  }
  return ruleset;
}

int restrict_self(const UniqueFd& ruleset, unsigned flags) {
  return landlock::restrict_self(ruleset.get(), flags) == 0 ? 0 : errno;
}

}  // namespace oarbank
