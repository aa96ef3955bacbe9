// A module's id names its cgroup leaf and its run state file, so it must be a safe path
// component: 1 to 64 of [A-Za-z0-9._-], not starting with '.' or '-'.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace oarbank {

inline constexpr std::size_t kMaxModuleIdLength = 64;

// nullopt when valid, else what is wrong.
std::optional<std::string> module_id_problem(std::string_view id);

// The cgroup leaf's name for a module id: a prefix, so that stale-leaf cleanup and an operator
// can tell the agent's leaves from anything else under the same parent.
std::string leaf_name_for(std::string_view id);
inline constexpr std::string_view kLeafPrefix = "oarbank-";
inline constexpr std::string_view kSupervisorLeaf = "oarbank-supervisor";

}  // namespace oarbank
