#include "plan/landlock_rights.hpp"

#include <utility>

#include "sys/landlock_abi.hpp"

namespace oarbank::landlock {
namespace {

constexpr std::pair<std::uint64_t, const char*> kFsRights[] = {
    {LANDLOCK_ACCESS_FS_EXECUTE, "execute"},       {LANDLOCK_ACCESS_FS_WRITE_FILE, "write_file"},
    {LANDLOCK_ACCESS_FS_READ_FILE, "read_file"},   {LANDLOCK_ACCESS_FS_READ_DIR, "read_dir"},
    {LANDLOCK_ACCESS_FS_REMOVE_DIR, "remove_dir"}, {LANDLOCK_ACCESS_FS_REMOVE_FILE, "remove_file"},
    {LANDLOCK_ACCESS_FS_MAKE_CHAR, "make_char"},   {LANDLOCK_ACCESS_FS_MAKE_DIR, "make_dir"},
    {LANDLOCK_ACCESS_FS_MAKE_REG, "make_reg"},     {LANDLOCK_ACCESS_FS_MAKE_SOCK, "make_sock"},
    {LANDLOCK_ACCESS_FS_MAKE_FIFO, "make_fifo"},   {LANDLOCK_ACCESS_FS_MAKE_BLOCK, "make_block"},
    {LANDLOCK_ACCESS_FS_MAKE_SYM, "make_sym"},     {LANDLOCK_ACCESS_FS_REFER, "refer"},
    {LANDLOCK_ACCESS_FS_TRUNCATE, "truncate"},     {LANDLOCK_ACCESS_FS_IOCTL_DEV, "ioctl_dev"},
};
constexpr std::pair<std::uint64_t, const char*> kNetRights[] = {
    {LANDLOCK_ACCESS_NET_BIND_TCP, "bind_tcp"},
    {LANDLOCK_ACCESS_NET_CONNECT_TCP, "connect_tcp"},
};
constexpr std::pair<std::uint64_t, const char*> kScopes[] = {
    {LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, "abstract_unix_socket"},
    {LANDLOCK_SCOPE_SIGNAL, "signal"},
};

template <std::size_t N>
std::vector<std::string> names(std::uint64_t bits,
                               const std::pair<std::uint64_t, const char*> (&table)[N]) {
  std::vector<std::string> out;
  for (const auto& [bit, name] : table) {
    if ((bits & bit) != 0) out.emplace_back(name);
  }
  return out;
}

}  // namespace

std::uint64_t fs_rights_for_abi(int abi) {
  if (!supports(abi, Abi::V1)) return 0;
  std::uint64_t rights = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: bits 0 to 12
  if (supports(abi, Abi::V2)) rights |= LANDLOCK_ACCESS_FS_REFER;
  if (supports(abi, Abi::V3)) rights |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (supports(abi, Abi::V5)) rights |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  return rights;
}

std::uint64_t net_rights_for_abi(int abi) {
  return supports(abi, Abi::V4) ? (LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP)
                                : 0;
}

std::uint64_t scopes_for_abi(int abi) {
  return supports(abi, Abi::V6) ? (LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL) : 0;
}

std::uint64_t file_rights() {
  return LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
         LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV;
}

std::uint64_t read_execute_rights() {
  return LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
}

std::uint64_t device_rw_rights() {
  return LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE;
}

std::vector<std::string> fs_right_names(std::uint64_t rights) { return names(rights, kFsRights); }
std::vector<std::string> net_right_names(std::uint64_t rights) { return names(rights, kNetRights); }
std::vector<std::string> scope_names(std::uint64_t scopes) { return names(scopes, kScopes); }

}  // namespace oarbank::landlock
