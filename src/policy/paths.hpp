#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace oarbank {

// Checks a path written in a policy or configuration: absolute, no "." or ".." component,
// no empty component, no control characters, at most PATH_MAX. One trailing slash is
// dropped. Returns nullopt and sets `problem` when invalid.
std::optional<std::string> normalize_policy_path(std::string_view path, std::string& problem);

// Why a normalized path is none a policy may name: the whole file system, or the kernel's own
// trees (/proc, /sys, /dev: devices come through devices.gpu alone); these would make the
// sandbox's rules moot. Asked of the path as written (the parser) and of where it leads on
// this node (the plan: a link can lead there). Empty when it may.
std::string forbidden_policy_path_problem(const std::string& path);

// Why a normalized path may not be written (work, data, temp) when it may be named: a whole
// top-level directory (/var, /home, /srv, /tmp). A writable grant covers the tree below it,
// and a top-level directory holds other users' and the node's directories, some writable by
// everyone (/var/tmp, a user's open directory): the module would plant files there that
// outlive its run (attack review, session 11). Empty when it may.
std::string writable_policy_path_problem(const std::string& path);

// The line for a policy path (at JSON Pointer `pointer`) that leads, on this node, where no
// policy path may: "policy /runtime/0: /srv/mod/root leads to / on this node, and a policy path
// must not be the root directory". Empty when `leads_to` may be named.
std::string forbidden_destination_problem(const std::string& pointer, const std::string& path,
                                          const std::string& leads_to);

}  // namespace oarbank
