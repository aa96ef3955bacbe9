#include "policy/suggest.hpp"

#include <algorithm>
#include <cstddef>

namespace oarbank {
namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// Optimal string alignment distance (Levenshtein with adjacent transpositions), ignoring case.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  const std::size_t m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1, 0));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1])) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

}  // namespace

std::optional<std::string> closest_name(std::string_view unknown,
                                        const std::vector<std::string>& known) {
  // Names are short; anything long is no slip of a known name (and costs nothing to skip).
  if (unknown.empty() || unknown.size() > 64) return std::nullopt;
  const std::size_t limit = unknown.size() <= 4 ? 1 : unknown.size() <= 8 ? 2 : 3;
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  bool tie = false;
  for (const auto& name : known) {
    const std::size_t distance = edit_distance(unknown, name);
    if (distance < best_distance) {
      best = name;
      best_distance = distance;
      tie = false;
    } else if (distance == best_distance && best && *best != name) {
      tie = true;
    }
  }
  if (!best || tie || best_distance > limit) return std::nullopt;
  return best;
}

std::string did_you_mean(std::string_view unknown, const std::vector<std::string>& known) {
  if (auto name = closest_name(unknown, known)) return "; did you mean \"" + *name + "\"?";
  return "";
}

}  // namespace oarbank
