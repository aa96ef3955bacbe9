// The one list of what a launch makes before the launcher's steps (apply/before_launch.hpp).
// A mechanism that makes something there adds its entry, defined in its apply half, here.
#include "apply/before_launch.hpp"

#include "apply/egress_relay.hpp"

namespace oarbank {
namespace {

constinit const BeforeLaunch kBeforeLaunch[] = {
    {LaunchStep::Network, egress_relay_before_exec, nullptr},
};

}  // namespace

std::span<const BeforeLaunch> before_launch_setups() { return kBeforeLaunch; }

void make_before_launch(const PreparedExec& prepared) {
  for (const BeforeLaunch& setup : kBeforeLaunch) {
    if (setup.bare_exec != nullptr) setup.bare_exec(prepared);
  }
}

}  // namespace oarbank
