// sandbox-run's own files must be out of every module's reach: a policy path that is,
// contains or lies inside the run state directory or the node's configuration is refused
// (70). Otherwise a module given that path (as data, say) could write a "dead run" record
// naming any process group of its operator, or rewrite the configuration sandbox-run trusts.
// Pure: the caller gives each path in the forms it compares (as written, and resolved).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "oarbank/policy.hpp"

namespace oarbank {

struct NamedPath {
  std::string what;                // "the run state directory", "data path", ...
  std::vector<std::string> forms;  // absolute; any form that overlaps counts
};

// Lexically normalized ("//", "." and ".." folded); "/" for an empty or root path.
std::string normalize_path(const std::string& path);
// Whether one of the two is the other or an ancestor of it (after normalize_path).
bool paths_overlap(const std::string& a, const std::string& b);

// Every path of the policy with what it is ("bundle", "runtime path", "work", ...), in the
// form written.
std::vector<NamedPath> policy_paths(const Policy& policy);
// The ones the module may write: work, data, temp (with what each is, and as plain paths).
std::vector<NamedPath> writable_policy_paths(const Policy& policy);
std::vector<std::string> writable_paths(const Policy& policy);

// nullopt, or the line that names the policy path, the protected path and how they overlap.
std::optional<std::string> protected_path_problem(const std::vector<NamedPath>& policy,
                                                  const std::vector<NamedPath>& protect);

}  // namespace oarbank
