// Issue 16: "did you mean" for an unknown policy field, configuration key, option or
// sub-command. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oarbank {

// The known name closest to `unknown` when it is close enough to be a slip: at most one edit
// (insert, delete, replace, or swap of two neighbours) for names up to 4 characters, two up to
// 8, three beyond; case is ignored. Nothing when none is, or when two are equally close.
std::optional<std::string> closest_name(std::string_view unknown,
                                        const std::vector<std::string>& known);

// "; did you mean \"egress\"?" or "" (for appending to a message).
std::string did_you_mean(std::string_view unknown, const std::vector<std::string>& known);

}  // namespace oarbank
