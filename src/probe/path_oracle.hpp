// What the plan asks of the paths on this node, as an interface: a fact the probe layer
// provides (probe/path_facts.hpp, the real one) and the plan consumes (tests use a map). Here,
// beside kernel_features.hpp, and not in plan/, so that the probe does not depend on the plan.
#pragma once

#include <string>

namespace oarbank {

enum class PathKind { Missing, Directory, File };

// Answers what a path is on this node. The real one (probe/path_facts.hpp) opens each path
// once with O_PATH and keeps the descriptor for the launch; tests use a map.
class PathOracle {
 public:
  virtual ~PathOracle() = default;
  [[nodiscard]] virtual PathKind kind(const std::string& path) const = 0;
  // The path with every symbolic link resolved (of a path kind() found).
  [[nodiscard]] virtual std::string canonical(const std::string& path) const = 0;
};

}  // namespace oarbank
