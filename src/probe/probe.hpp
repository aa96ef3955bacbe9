// Asks the running kernel what it offers. Every answer comes from a call with no side effect
// and its errno, never from the kernel's version string.
#pragma once

#include "config/node_config.hpp"
#include "probe/kernel_features.hpp"

namespace oarbank {

// What to probe beyond Landlock and seccomp; a launch probes only what its policy needs.
struct ProbeScope {
  bool gpu_devices = true;         // scan /dev for GPU nodes
  bool cgroup = true;              // find cgroup2, the leaves' parent, its controllers
  bool network_namespaces = true;  // try to create one, in a child
  // seccomp user notification and the audit state (issue 14's report rows): a netlink round
  // trip, off the launch path (sandbox-run's denial readers ask for themselves).
  bool denial_facts = true;
};

KernelFeatures probe_kernel(const NodeConfig& config, ProbeScope scope = {});

// The GPU device nodes under `dev_root` (normally "/dev"): dri, nvidia*, kfd.
std::vector<std::string> find_gpu_device_nodes(const std::string& dev_root);

}  // namespace oarbank
