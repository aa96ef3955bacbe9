// Asks the running kernel what it offers. Every answer comes from a call with no side effect
// and its errno, never from the kernel's version string.
#pragma once

#include "probe/kernel_features.hpp"

namespace oarbank {

struct ProbeScope {
  bool gpu_devices = true;  // scan /dev for GPU nodes (skipped on launches that need none)
};

KernelFeatures probe_kernel(ProbeScope scope = {});

// The GPU device nodes under `dev_root` (normally "/dev"): dri, nvidia*, kfd.
std::vector<std::string> find_gpu_device_nodes(const std::string& dev_root);

}  // namespace oarbank
