// Strict JSON reading shared by the policy and the node configuration: size and depth
// limits, duplicate keys refused, errors as (JSON Pointer, problem). Comments are refused
// unless the caller allows them: the node configuration does (an operator's file, shipped
// commented), a policy does not (the SDK writes it, and other readers of the same file
// would refuse what we accepted).
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace oarbank {

struct StrictJsonError {
  std::string pointer;
  std::string problem;
};

// Allow: `//` line and `/* */` block comments are skipped as whitespace (JSONC).
enum class JsonComments { Refuse, Allow };

// Parses `text`. On failure returns false and fills `error`.
bool parse_strict_json(std::string_view text, std::size_t max_bytes, int max_depth,
                       nlohmann::json& out, StrictJsonError& error,
                       JsonComments comments = JsonComments::Refuse);

// Reads an open descriptor to its end, at most max_bytes (`name` for the messages). Returns
// false with `problem` on failure.
bool read_small_fd(int fd, const std::string& name, std::size_t max_bytes, std::string& out,
                   std::string& problem);

// Reads a whole file of at most max_bytes, only if it is the operator's to give
// (sys/trusted_input.hpp: root's or the caller's, writable by no one else). Returns false with
// `problem` on failure.
bool read_small_file(const std::string& path, std::size_t max_bytes, std::string& out,
                     std::string& problem);

// "/a/b~1c": escapes a key for a JSON Pointer.
std::string json_pointer_append(const std::string& base, std::string_view key);
std::string json_pointer_append(const std::string& base, std::size_t index);

// The text for a one-line message: control characters (from a key such as "a\nb") written as
// \u000a, so an error stays one line and cannot drive the terminal it is printed on.
std::string printable(std::string_view text);

// "an object", "a string", ...: the JSON type of a value, for messages.
std::string_view json_type_name(const nlohmann::json& value);

}  // namespace oarbank
