#include "supervise/run_explain.hpp"

#include <unistd.h>

#include "apply/prepared_exec.hpp"
#include "plan/capabilities.hpp"
#include "plan/launch_steps.hpp"
#include "plan/module_world.hpp"
#include "plan/plan_json.hpp"
#include "probe/probe.hpp"
#include "supervise/cgroup_leaf.hpp"
#include "supervise/uid_registry.hpp"
#include "sys/error.hpp"

namespace oarbank {

std::string explain_module_run(LaunchRequest request, NodeConfig config, const Policy& policy,
                               const std::optional<std::string>& id) {
  KernelFeatures features = probe_kernel(config, launch_probe_scope(policy, config));
  WorldFacts facts;
  facts.root = ::geteuid() == 0;
  facts.egress = policy.net == NetMode::EgressAllowlist;
  facts.namespace_confinement =
      facts.egress && egress_confinement(features, config) == EgressConfinement::Namespace;
  std::string why_not;
  facts.leaf = find_cgroup_place(config, why_not).has_value();
  for (int fd : request.keep_fds) facts.kept_terminal = facts.kept_terminal || ::isatty(fd) == 1;
  // The run's user (ModuleRun::lease_user): a generated id leases nothing.
  if (facts.root && config.module_users && id) {
    facts.own_user = true;
    request.user_source = ModuleUserSource::OwnLeasedAtRun;
    for (const auto& lease : list_module_users(user_registry_dir())) {
      if (lease.id != *id) continue;
      config.module_uid = lease.uid;
      config.module_gid = lease.gid;
      request.user_source = ModuleUserSource::Own;
    }
  }
  request.world = module_world_for(config, facts);
  request.own_terminal = true;
  request.in_leaf = facts.leaf;
  if (facts.root && config.module_mounts) {
    const std::string mounts = why_no_own_mounts(features, config);
    if (!mounts.empty()) {
      throw step_error(LaunchStep::Mounts,
                       "module_mounts is true in the node configuration, and " + mounts, 0,
                       ErrorKind::Unenforceable);
    }
    request.own_mounts = true;
  }
  auto prepared = prepare_exec(request, config, policy, std::move(features), true);
  return explain_plan_text(prepared->plan, prepared->policy, prepared->features, prepared->config);
}

}  // namespace oarbank
