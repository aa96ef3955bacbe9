#include "probe/proc_status.hpp"

#include <charconv>
#include <vector>

namespace oarbank {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

template <typename T>
std::optional<T> number(std::string_view s, int base = 10) {
  T value{};
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value, base);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

std::vector<std::string_view> fields(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    s = trim(s);
    auto end = s.find_first_of(" \t");
    out.push_back(s.substr(0, end));
    if (end == std::string_view::npos) break;
    s.remove_prefix(end);
  }
  return out;
}

}  // namespace

ProcStatus parse_proc_status(std::string_view text) {
  ProcStatus status;
  while (!text.empty()) {
    auto newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = line.substr(0, colon);
    std::string_view value = trim(line.substr(colon + 1));
    if (key == "NoNewPrivs") {
      status.no_new_privs = number<int>(value);
    } else if (key == "Seccomp") {
      status.seccomp = number<int>(value);
    } else if (key == "Seccomp_filters") {
      status.seccomp_filters = number<int>(value);
    } else if (key == "CapInh") {
      status.cap_inh = number<std::uint64_t>(value, 16);
    } else if (key == "CapPrm") {
      status.cap_prm = number<std::uint64_t>(value, 16);
    } else if (key == "CapEff") {
      status.cap_eff = number<std::uint64_t>(value, 16);
    } else if (key == "CapBnd") {
      status.cap_bnd = number<std::uint64_t>(value, 16);
    } else if (key == "CapAmb") {
      status.cap_amb = number<std::uint64_t>(value, 16);
    } else if (key == "Uid" || key == "Gid") {
      auto parts = fields(value);
      if (parts.size() == 4) {
        if (key == "Uid") {
          status.real_uid = number<std::uint32_t>(parts[0]);
          status.effective_uid = number<std::uint32_t>(parts[1]);
          status.saved_uid = number<std::uint32_t>(parts[2]);
          status.fs_uid = number<std::uint32_t>(parts[3]);
        } else {
          status.real_gid = number<std::uint32_t>(parts[0]);
          status.effective_gid = number<std::uint32_t>(parts[1]);
        }
      }
    } else if (key == "Groups") {
      status.groups = std::string(value);
    }
  }
  return status;
}

}  // namespace oarbank
