#include "plan/protected_paths.hpp"

namespace oarbank {

std::string normalize_path(const std::string& path) {
  std::vector<std::string> parts;
  for (std::size_t start = 0; start <= path.size();) {
    std::size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    std::string part = path.substr(start, slash - start);
    start = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(std::move(part));
  }
  std::string out;
  for (const auto& part : parts) out += "/" + part;
  return out.empty() ? "/" : out;
}

namespace {

// Whether `inner` is `outer` or lies below it (both normalized).
bool within(const std::string& inner, const std::string& outer) {
  if (outer == "/") return true;
  return inner == outer || (inner.starts_with(outer) && inner[outer.size()] == '/');
}

}  // namespace

bool paths_overlap(const std::string& a, const std::string& b) {
  const std::string na = normalize_path(a), nb = normalize_path(b);
  return within(na, nb) || within(nb, na);
}

std::vector<NamedPath> policy_paths(const Policy& policy) {
  std::vector<NamedPath> out;
  if (!policy.bundle.empty()) out.push_back({"bundle", {policy.bundle}});
  for (const auto& p : policy.runtime) out.push_back({"runtime path", {p}});
  for (const auto& p : policy.tools) out.push_back({"tools path", {p}});
  std::vector<NamedPath> writable = writable_policy_paths(policy);
  out.insert(out.end(), writable.begin(), writable.end());
  return out;
}

std::vector<std::string> writable_paths(const Policy& policy) {
  std::vector<std::string> out;
  if (policy.work) out.push_back(*policy.work);
  out.insert(out.end(), policy.data.begin(), policy.data.end());
  if (policy.temp) out.push_back(*policy.temp);
  return out;
}

std::vector<NamedPath> writable_policy_paths(const Policy& policy) {
  std::vector<NamedPath> out;
  if (policy.work) out.push_back({"work", {*policy.work}});
  for (const auto& p : policy.data) out.push_back({"data path", {p}});
  if (policy.temp) out.push_back({"temp", {*policy.temp}});
  return out;
}

std::optional<std::string> protected_path_problem(const std::vector<NamedPath>& policy,
                                                  const std::vector<NamedPath>& protect) {
  for (const auto& mine : protect) {
    for (const auto& theirs : policy) {
      for (const auto& p : theirs.forms) {
        for (const auto& m : mine.forms) {
          if (!paths_overlap(p, m)) continue;
          const std::string np = normalize_path(p), nm = normalize_path(m);
          const char* how = np == nm ? " is " : within(nm, np) ? " contains " : " lies inside ";
          std::string line = "the policy's " + theirs.what + " " + theirs.forms.front();
          if (np != normalize_path(theirs.forms.front())) line += " (" + np + ")";
          line += how + mine.what + " " + nm;
          return line;
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace oarbank
