// Where cgroup v2 is and what it offers here. Parsers are pure and take the text of
// /proc/self/mountinfo and /proc/self/cgroup, so both layouts (unified /sys/fs/cgroup and the
// hybrid /sys/fs/cgroup/unified) are tested from samples; probe_cgroup reads the real files.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "config/node_config.hpp"
#include "probe/kernel_features.hpp"

namespace oarbank {

// The mount point of the first cgroup2 file system in a mountinfo text, with octal escapes
// (\040 for a space) decoded.
std::optional<std::string> find_cgroup2_mount(std::string_view mountinfo);

// The cgroup v2 path ("0::/system.slice/oarbank-agent.service") in a /proc/<pid>/cgroup text.
std::optional<std::string> find_unified_cgroup(std::string_view proc_cgroup);

// The cgroup, relative to the mount ("" for its root), that module leaves are made in: the
// configuration's cgroup_parent, else `own_cgroup` less a trailing supervisor leaf
// (sandbox-run moves itself into one; the module leaves are its siblings). Pure; the report
// and sandbox-run both place leaves by it.
std::string leaf_parent_cgroup(const NodeConfig& config, const std::string& own_cgroup);

// Reads the real files. `proc_root` and the mount come from the running system; the parent of
// module leaves is the configuration's cgroup_parent, else this process's own cgroup.
CgroupFacts probe_cgroup(const NodeConfig& config, const std::string& proc_root = "/proc");

}  // namespace oarbank
