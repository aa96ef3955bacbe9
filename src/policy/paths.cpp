#include "policy/paths.hpp"

namespace oarbank {

std::optional<std::string> normalize_policy_path(std::string_view path, std::string& problem) {
  if (path.empty()) {
    problem = "must not be empty";
    return std::nullopt;
  }
  if (path.front() != '/') {
    problem = "must be an absolute path";
    return std::nullopt;
  }
  if (path.size() >= 4096) {
    problem = "is longer than PATH_MAX";
    return std::nullopt;
  }
  for (std::size_t i = 0; i < path.size(); ++i) {
    const auto c = static_cast<unsigned char>(path[i]);
    // C1 controls too (U+0080-U+009F, UTF-8 C2 80 to C2 9F; attack review): U+009B is CSI, and
    // a path is printed on the operator's terminal by the launcher's own step lines.
    const bool c1 = c == 0xc2 && i + 1 < path.size() &&
                    static_cast<unsigned char>(path[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(path[i + 1]) <= 0x9f;
    if (c < 0x20 || c == 0x7f || c1) {
      problem = "contains a control character";
      return std::nullopt;
    }
  }
  // Before the trailing slash is dropped: "//" must not become "/".
  if (path.find("//") != std::string_view::npos) {
    problem = "has an empty component (\"//\")";
    return std::nullopt;
  }
  std::string out(path);
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  std::size_t start = 1;
  while (start <= out.size() && out.size() > 1) {
    std::size_t end = out.find('/', start);
    if (end == std::string::npos) end = out.size();
    std::string_view part(out.data() + start, end - start);
    if (part.empty()) {
      problem = "has an empty component (\"//\")";
      return std::nullopt;
    }
    if (part == "..") {
      problem = "must not contain \"..\"";
      return std::nullopt;
    }
    if (part == ".") {
      problem = "must not contain \".\" components";
      return std::nullopt;
    }
    start = end + 1;
  }
  return out;
}

std::string forbidden_policy_path_problem(const std::string& path) {
  if (path == "/") return "must not be the root directory";
  for (const char* kernel_tree : {"/proc", "/sys", "/dev"}) {
    const std::string tree = kernel_tree;
    if (path == tree || path.starts_with(tree + "/")) {
      return "must not be in " + tree + " (the kernel's own tree)";
    }
  }
  return "";
}

std::string writable_policy_path_problem(const std::string& path) {
  if (path.size() > 1 && path.find('/', 1) == std::string::npos) {
    return "must not be a whole top-level directory (" + path +
           "): the module writes everything below it, other users' and the node's directories "
           "too; name a directory of the module's own below it";
  }
  return "";
}

std::string forbidden_destination_problem(const std::string& pointer, const std::string& path,
                                          const std::string& leads_to) {
  const std::string problem = forbidden_policy_path_problem(leads_to);
  if (problem.empty()) return "";
  return "policy " + pointer + ": " + path + " leads to " + leads_to +
         " on this node, and a policy path " + problem;
}

}  // namespace oarbank
