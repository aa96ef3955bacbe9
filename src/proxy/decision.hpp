// Whether a module's request goes through, and to which addresses.
//
// 1. The target must match an entry of the module's allowlist (destination_match.hpp).
// 2. A name is resolved once; an IP literal is its own answer.
// 3. Every answer must be permitted (address_class.hpp): one forbidden answer refuses the
//    destination, so a name cannot smuggle 127.0.0.1 in among public addresses.
// 4. The answers checked are the addresses connected to, and no others: nothing resolves the
//    name a second time.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "oarbank/policy.hpp"
#include "proxy/address_class.hpp"
#include "proxy/destination_match.hpp"
#include "proxy/resolver.hpp"

namespace oarbank::proxy {

struct Verdict {
  bool allowed = false;
  int http_status = 0;  // refused: 403 (policy), 502 (DNS failure), 504 (DNS timeout)
  std::string reason;   // refused: why; allowed: the allowlist entry that matched
  // allowed: the checked addresses to connect to, in order. refused after resolution: the
  // answers, for the log.
  std::vector<IpAddress> addresses;
};

// Steps 3 and 4: the verdict on a resolution's outcome for `target` (pure).
Verdict judge_resolution(const Target& target, const ResolveResult& result,
                         const AddressContext& context);

// Steps 1 to 4. `done` is called exactly once (synchronously for a refusal by the allowlist
// or an IP literal, else when the resolver answers).
void decide(const Target& target, const std::vector<EgressDestination>& allowlist,
            const AddressContext& context, Resolver& resolver, std::function<void(Verdict)> done);

}  // namespace oarbank::proxy
