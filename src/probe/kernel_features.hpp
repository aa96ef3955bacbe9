// What the running kernel offers, as plain data. probe.cpp fills it by asking the kernel;
// tests build it by hand to cover every ABI on any machine.
#pragma once

#include <string>
#include <vector>

namespace oarbank {

enum class LandlockState {
  NotBuilt,  // landlock_create_ruleset answers ENOSYS: the kernel has no Landlock
  Disabled,  // EOPNOTSUPP: built, but left out of the boot's lsm= list
  Present,
};

struct KernelFeatures {
  std::string kernel_release;  // uname -r; a fact for the report, never used to decide
  LandlockState landlock = LandlockState::NotBuilt;
  int landlock_abi = 0;  // the kernel's ABI when Present, else 0
  bool seccomp_filter = false;  // seccomp(2) filters with SECCOMP_RET_ERRNO and KILL_PROCESS
  bool running_as_root = false;  // effective uid 0
  std::vector<std::string> gpu_device_nodes;  // /dev/dri, /dev/nvidia*, /dev/kfd that exist
};

std::string_view to_string(LandlockState state);

}  // namespace oarbank
