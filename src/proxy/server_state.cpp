#include "proxy/server_state.hpp"

#include "proxy/cares_resolver.hpp"
#include "proxy/local_addresses.hpp"

namespace oarbank::proxy {

namespace {
constexpr auto kNodeAddressRefresh = std::chrono::seconds(5);
}

ServerState::ServerState(asio::io_context& io_context, ProxySettings proxy_settings,
                         std::vector<IpRange> exemptions)
    : io(io_context), settings(std::move(proxy_settings)), log(settings.log) {
  resolver = std::make_unique<CaresResolver>(io, settings.dns_servers, settings.dns_timeout);
  context_.allow_private_ranges = settings.allow_private_ranges;
  context_.testing_exemptions = std::move(exemptions);
}

const AddressContext& ServerState::address_context() {
  const auto now = std::chrono::steady_clock::now();
  if (refreshed_ == std::chrono::steady_clock::time_point{} ||
      now - refreshed_ >= kNodeAddressRefresh) {
    if (auto addresses = node_addresses()) context_.node_addresses = std::move(*addresses);
    refreshed_ = now;
  }
  return context_;
}

std::optional<std::string> ServerState::routed_to_this_node(const IpAddress& address) const {
  for (const auto& range : context_.testing_exemptions) {
    if (range.contains(address)) return std::nullopt;
  }
  return proxy::routed_to_this_node(address);
}

}  // namespace oarbank::proxy
