// How many names one module may have the proxy look up (attack review, session 15). Every
// request for an allowed name is resolved anew (nothing is cached, so an answer is never
// stale), and a wildcard entry (`*.example.com:443`) allows any number of distinct names: a
// module asked 1000 in half a second, 2000 queries to the resolver the node and every module
// share. A token bucket per module bounds that; past it the lookup fails at once (502, naming
// the bound) and nothing is sent.
#pragma once

#include <chrono>
#include <string>

#include "proxy/resolver.hpp"

namespace oarbank::proxy {

// Lookups a module may start a second, on average, and at once after a quiet while.
inline constexpr double kLookupsPerSecond = 100;
inline constexpr double kLookupBurst = 200;

// Pure: the bucket, refilled by the time that passed since it was last asked.
class LookupBucket {
 public:
  // Whether a lookup may start at `now` (and takes its token).
  bool take(std::chrono::steady_clock::time_point now);

 private:
  double tokens_ = kLookupBurst;
  std::chrono::steady_clock::time_point last_{};
};

// A resolver that asks `inner` only while `bucket` has a token, for one decision: made on the
// stack where the session decides (decide() calls resolve before it returns).
class BudgetedResolver : public Resolver {
 public:
  BudgetedResolver(Resolver& inner, LookupBucket& bucket) : inner_(inner), bucket_(bucket) {}
  void resolve(const std::string& name, Callback done) override;

 private:
  Resolver& inner_;
  LookupBucket& bucket_;
};

}  // namespace oarbank::proxy
