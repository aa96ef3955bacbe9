#include "plan/module_world.hpp"

namespace oarbank {

seccomp::ModuleWorld module_world_for(const NodeConfig& config, const WorldFacts& facts) {
  seccomp::ModuleWorld world;
  if (!facts.root || !config.module_world) return world;
  world.own_namespaces = !facts.egress || facts.namespace_confinement;
  world.own_group = world.own_namespaces && facts.leaf && !facts.kept_terminal;
  // A uid leased to this id alone; the fixed module_user is shared by every module.
  world.own_user = facts.own_user;
  return world;
}

}  // namespace oarbank
