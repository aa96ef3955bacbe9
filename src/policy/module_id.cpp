#include "policy/module_id.hpp"

namespace oarbank {

std::optional<std::string> module_id_problem(std::string_view id) {
  if (id.empty()) return "is empty";
  if (id.size() > kMaxModuleIdLength) return "is longer than 64 characters";
  if (id.front() == '.' || id.front() == '-') return "starts with '.' or '-'";
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return "may hold only letters, digits, '.', '_' and '-'";
  }
  // "supervisor" would name the leaf the supervisors themselves live in.
  if (id == "supervisor") return "is reserved";
  return std::nullopt;
}

std::string leaf_name_for(std::string_view id) { return std::string(kLeafPrefix) + std::string(id); }

}  // namespace oarbank
