#include "apply/launch_hooks.hpp"

namespace oarbank {

bool launch_test_skips(LaunchStep /*step*/) { return false; }

}  // namespace oarbank
