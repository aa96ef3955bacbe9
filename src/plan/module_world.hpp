// Issue 12, "Each module a world of its own": which parts of its world sandbox-run makes a
// module's own, decided from what the run knows before it makes them (pure: the run itself,
// supervise/module_run.cpp, and sandbox-run --explain ask the same function, so the plan
// --explain prints is the run's). What each part lets the filter allow: seccomp_rules.hpp.
#pragma once

#include "config/node_config.hpp"
#include "plan/seccomp_rules.hpp"

namespace oarbank {

// Whose uid the module runs as (the plan's identity; --explain's "world").
enum class ModuleUserSource {
  Caller,          // sandbox-run or sandbox-exec started unprivileged: the caller's own uid
  ModuleUser,      // the node's fixed module_user, shared by every module
  Own,             // the module id's own uid, leased from module_users (uid_registry.hpp)
  OwnLeasedAtRun,  // --explain only: the id has no lease yet; the run leases one
};

// What a root sandbox-run knows before it makes the module's world.
struct WorldFacts {
  bool root = false;                   // sandbox-run runs as root
  bool egress = false;                 // the policy's net is egress-allowlist
  bool namespace_confinement = false;  // ... kept to the proxy by a network namespace
  bool leaf = false;                   // the module's container is a cgroup leaf
  bool kept_terminal = false;          // a --keep-fd descriptor is a terminal
  bool own_user = false;               // a uid of the module id's own (a lease)
};

// Nothing unless root and the node's module_world: the namespaces (an egress module's only
// where a namespace confines it; port only keeps the node's); its own process group where
// the container is a leaf and no terminal is handed in (its 0-2 on a terminal are its own
// pty); its own user where it has a lease.
seccomp::ModuleWorld module_world_for(const NodeConfig& config, const WorldFacts& facts);

}  // namespace oarbank
