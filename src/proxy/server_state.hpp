// What the server's connections share, on the event loop's thread: internal to the proxy
// library (proxy_server.cpp and the session: session.cpp, admission.cpp, http_forward.cpp),
// not part of its API.
#pragma once

#include <asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "oarbank/policy.hpp"
#include "proxy/address_class.hpp"
#include "proxy/lookup_budget.hpp"
#include "proxy/proxy_log.hpp"
#include "proxy/proxy_settings.hpp"
#include "proxy/resolver.hpp"

namespace oarbank::proxy {

class Session;

struct ModuleState {
  std::string id;
  std::vector<EgressDestination> allowlist;
  std::size_t active = 0;  // connections of this module being handled
  PeerCheck peer_check;    // empty: every connection to the module's listener is its own
  LookupBucket lookups;    // the names it may have looked up (lookup_budget.hpp)
};

struct ServerState {
  ServerState(asio::io_context& io_context, ProxySettings proxy_settings,
              std::vector<IpRange> exemptions);

  // The address context, its node addresses refreshed when older than a few seconds
  // (interfaces come and go; getifaddrs per connection would cost more than it is worth).
  const AddressContext& address_context();

  // routed_to_this_node (local_addresses.hpp), but nullopt for an address the testing
  // exemptions allow (the tests' loopback upstreams).
  std::optional<std::string> routed_to_this_node(const IpAddress& address) const;

  asio::io_context& io;
  ProxySettings settings;
  ProxyLog log;
  std::unique_ptr<Resolver> resolver;
  std::size_t active_total = 0;
  std::set<Session*> sessions;  // every live session, for stop() and remove_module()
  bool stopping = false;
  bool relay_tunnels_by_copy = false;  // TestingOnlyExemptions
  std::size_t large_pipes = 0;         // tunnels' pipes of 1 MiB now open (SplicePipe)

 private:
  AddressContext context_;
  std::chrono::steady_clock::time_point refreshed_{};
};

}  // namespace oarbank::proxy
