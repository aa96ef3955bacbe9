// Where the policy file lies, against what the module may write. Attack review (session 14): a
// policy inside the module's work, temp or data was the module's to rewrite, and its next run
// read the grants it wrote there (a runtime path, egress, exec_writable). sandbox-run refused it
// first; a bare sandbox-exec started by the module's own user (who then owns what the module
// writes, so the trusted-input check accepts it) refuses it the same way (session 15).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "oarbank/policy.hpp"

namespace oarbank {

// `path` made absolute against the working directory (unchanged when it already is).
std::string absolute_path(std::string path);

// A path as written, then as the kernel resolves it (links followed as far as it exists): what
// sandbox-run compares to keep its own files out of a module's reach (protected_paths.hpp).
std::vector<std::string> path_forms(const std::string& path);

// nullopt, or the line naming the policy's writable path (work, temp, data) that is, contains
// or lies inside the policy file at `policy_path` ("-", standard input, is never inside one).
// A policy with no writable path costs nothing here.
std::optional<std::string> policy_file_inside_writable(const std::string& policy_path,
                                                       const Policy& policy);

// What the line above is followed by: why it is refused, and what to do.
inline constexpr const char* kPolicyFileInsideWritableWhy =
    "the module could rewrite its own policy for its next run; keep the policy outside work, "
    "temp and data";

}  // namespace oarbank
