// A mechanism's pure half (issue 11): what one kernel mechanism contributes to the capability
// table, the plan, --explain and the seccomp filter, as plain data and functions. Each mechanism
// that has one lives in a file pair of its own (plan/mechanism_NAME.{hpp,cpp}) and is listed
// once, in plan/mechanisms.cpp; the shared files (capabilities.cpp, plan.cpp, plan_json.cpp,
// seccomp_rules.cpp) walk that list at fixed points instead of naming the mechanism.
//
// Plain function pointers in a constant-initialized table: the plan is made on every launch,
// so walking the list costs a few indirect calls and allocates nothing of its own.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "plan/capabilities.hpp"
#include "plan/seccomp_rules.hpp"
#include "probe/kernel_features.hpp"

namespace oarbank {

struct Plan;  // plan/plan.hpp, which includes the mechanisms' headers

// What a mechanism's plan section and explain part read.
struct MechanismInput {
  const Policy& policy;
  const KernelFeatures& features;
  const NodeConfig& config;
};

struct Mechanism {
  std::string_view name;  // for the unit tests and the docs ("network", "cgroup")
  // Its rows of the capability table (entries with their evaluators and their needed_by):
  // capability_table() gathers every mechanism's rows with the rows not yet in a pair of their
  // own (capabilities.cpp), in CapabilityRow order, the report's.
  std::span<const CapabilityEntry> rows;
  // Its section of the plan, once the Landlock path rules are taken and before the filter is
  // chosen (make_plan). nullptr: none.
  void (*plan_section)(const MechanismInput& input, Plan& plan);
  // Variables it puts in the module's environment, after HOME and TMPDIR and before the
  // broker's (module_environment). nullptr: none.
  void (*environment)(const Policy& policy, const NodeConfig& config,
                      std::vector<std::string>& environment);
  // Its keys in --explain's object (explain_plan). nullptr: none.
  void (*explain)(const MechanismInput& input, const Plan& plan, nlohmann::json& out);
  // Its seccomp rules on the socket calls, after the family rules of socket(2)
  // (seccomp::rules_for; compiled at build time by tools/filtergen). nullptr: none.
  void (*socket_rules)(const seccomp::FilterVariant& variant, std::vector<seccomp::Rule>& rules);
};

// Every mechanism with a pure half of its own, in the order their contributions are made
// (plan/mechanisms.cpp).
std::span<const Mechanism* const> mechanisms();

}  // namespace oarbank
