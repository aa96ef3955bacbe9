#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "oarbank/policy.hpp"

namespace oarbank {

// Parses one `egress` entry. Returns nullopt and sets `problem` when invalid.
std::optional<EgressDestination> parse_egress_destination(std::string_view text,
                                                          std::string& problem);

}  // namespace oarbank
