#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace oarbank {

// Checks a path written in a policy or configuration: absolute, no "." or ".." component,
// no empty component, no control characters, at most PATH_MAX. One trailing slash is
// dropped. Returns nullopt and sets `problem` when invalid.
std::optional<std::string> normalize_policy_path(std::string_view path, std::string& problem);

}  // namespace oarbank
