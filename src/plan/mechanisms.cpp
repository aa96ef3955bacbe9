// The one list of the mechanisms whose pure half is a file pair of its own (plan/mechanism.hpp).
// A new mechanism is a new pair and one line here.
#include "plan/mechanism.hpp"
#include "plan/mechanism_cgroup.hpp"
#include "plan/mechanism_network.hpp"

namespace oarbank {
namespace {

// Order: the order of their plan sections, environment variables, explain keys and filter
// rules (the compiled programs and the golden files depend on it).
constinit const Mechanism* const kMechanisms[] = {
    &kNetworkMechanism,
    &kCgroupMechanism,
};

}  // namespace

std::span<const Mechanism* const> mechanisms() { return kMechanisms; }

}  // namespace oarbank
