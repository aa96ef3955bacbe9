// The name resolution the decision needs, behind an interface: the server uses c-ares
// (cares_resolver.hpp); tests of the decision use a fake that answers what they choose.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "proxy/ip_address.hpp"

namespace oarbank::proxy {

struct ResolveResult {
  enum class Status { Ok, NotFound, Failed, Timeout };
  Status status = Status::Failed;
  std::vector<IpAddress> addresses;  // Ok: every A and AAAA answer, without duplicates
  std::string error;                 // otherwise: what went wrong
};

class Resolver {
 public:
  using Callback = std::function<void(ResolveResult)>;
  virtual ~Resolver() = default;
  // Resolves `name` (A and AAAA) once, within the resolver's timeout; calls `done` exactly
  // once, on the event loop's thread (possibly before resolve returns).
  virtual void resolve(const std::string& name, Callback done) = 0;
  // Ends every pending resolution (their callbacks run, with Failed) and closes any socket;
  // called when the proxy stops.
  virtual void shutdown() {}
};

}  // namespace oarbank::proxy
