#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "oarbank/policy.hpp"

namespace oarbank {

// A DNS name in ASCII, lower case (IDNs in punycode): labels of letters, digits and hyphens,
// 1 to 63 characters, not starting or ending with a hyphen, 253 characters in all. The policy
// parser and the proxy's request parser judge names by this one rule. Sets `problem`.
bool valid_dns_name(std::string_view name, std::string& problem);

// Parses one `egress` entry. Returns nullopt and sets `problem` when invalid.
std::optional<EgressDestination> parse_egress_destination(std::string_view text,
                                                          std::string& problem);

}  // namespace oarbank
