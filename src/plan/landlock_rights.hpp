// Landlock access rights per ABI, as pure tables (no kernel calls).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sys/landlock_abi.hpp"

namespace oarbank::landlock {

// Below ABI 3 (Linux 6.2) truncate(2) is not governed: the filesystem row is unavailable.
inline constexpr Abi kFilesystemFloorAbi = Abi::V3;

// Every filesystem right the given ABI can handle.
std::uint64_t fs_rights_for_abi(int abi);
// Network rights (ABI 4+), scopes (ABI 6+).
std::uint64_t net_rights_for_abi(int abi);
std::uint64_t scopes_for_abi(int abi);

// Rights that make sense on a file (the kernel refuses directory rights on a file rule).
std::uint64_t file_rights();

// Read and execute: the bundle, runtime, tools and base system.
std::uint64_t read_execute_rights();
// Read and write on device nodes (/dev/null ...); device ioctls added separately for GPUs.
std::uint64_t device_rw_rights();

// Names of the bits set, e.g. {"execute", "read_file"}.
std::vector<std::string> fs_right_names(std::uint64_t rights);
std::vector<std::string> net_right_names(std::uint64_t rights);
std::vector<std::string> scope_names(std::uint64_t scopes);

}  // namespace oarbank::landlock
