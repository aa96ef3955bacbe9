#include "proxy/lookup_budget.hpp"

#include <algorithm>

namespace oarbank::proxy {

bool LookupBucket::take(std::chrono::steady_clock::time_point now) {
  if (last_ != std::chrono::steady_clock::time_point{}) {
    const double seconds = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(kLookupBurst, tokens_ + std::max(0.0, seconds) * kLookupsPerSecond);
  }
  last_ = now;
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

void BudgetedResolver::resolve(const std::string& name, Callback done) {
  if (!bucket_.take(std::chrono::steady_clock::now())) {
    ResolveResult refused;
    refused.status = ResolveResult::Status::Failed;
    refused.error = "not asked: this module started more than " +
                    std::to_string(static_cast<int>(kLookupsPerSecond)) +
                    " name lookups a second (the proxy's bound for one module)";
    done(std::move(refused));
    return;
  }
  inner_.resolve(name, std::move(done));
}

}  // namespace oarbank::proxy
