#include "proxy/decision.hpp"

#include <memory>

namespace oarbank::proxy {

Verdict judge_resolution(const Target& target, const ResolveResult& result,
                         const AddressContext& context) {
  Verdict verdict;
  verdict.addresses = result.addresses;
  switch (result.status) {
    case ResolveResult::Status::Timeout:
      verdict.http_status = 504;
      verdict.reason = "DNS timeout for " + target.host;
      return verdict;
    case ResolveResult::Status::NotFound:
      verdict.http_status = 502;
      verdict.reason = target.host + " does not resolve";
      return verdict;
    case ResolveResult::Status::Failed:
      verdict.http_status = 502;
      verdict.reason = "DNS failure for " + target.host + ": " + result.error;
      return verdict;
    case ResolveResult::Status::Ok:
      break;
  }
  if (result.addresses.empty()) {
    verdict.http_status = 502;
    verdict.reason = target.host + " has no address";
    return verdict;
  }
  for (const auto& address : result.addresses) {
    std::string why;
    if (!address_permitted(address, context, why)) {
      verdict.http_status = 403;
      verdict.reason = target.ip ? why : target.host + " resolves to " + why;
      return verdict;
    }
  }
  verdict.allowed = true;
  return verdict;
}

void decide(const Target& target, const std::vector<EgressDestination>& allowlist,
            const AddressContext& context, Resolver& resolver, std::function<void(Verdict)> done) {
  const EgressDestination* entry = find_allowing_entry(allowlist, target);
  if (!entry && target.ip) {
    // A literal the node refuses whatever the allowlist says (a private range without
    // proxy_allow_private_ranges, link-local, the node's own): refused for that, so the
    // refusal names no egress entry to add (attack review: --learn proposed a module's
    // 169.254.169.254:80 from "not on the allowlist").
    std::string why;
    if (!address_permitted(*target.ip, context, why)) {
      Verdict verdict;
      verdict.http_status = 403;
      verdict.reason = why;
      verdict.addresses = {*target.ip};
      done(std::move(verdict));
      return;
    }
  }
  if (!entry) {
    Verdict verdict;
    verdict.http_status = 403;
    verdict.reason = target.authority() + " is not on the module's egress allowlist";
    // The log's "addresses" names the literal itself (docs/proxy.md); a name is not resolved
    // for a destination that is refused anyway.
    if (target.ip) verdict.addresses = {*target.ip};
    done(std::move(verdict));
    return;
  }
  std::string rule = entry->to_string();
  if (target.ip) {
    ResolveResult literal;
    literal.status = ResolveResult::Status::Ok;
    literal.addresses = {*target.ip};
    Verdict verdict = judge_resolution(target, literal, context);
    if (verdict.allowed) verdict.reason = "allowed by " + rule;
    done(std::move(verdict));
    return;
  }
  // The context is copied: the answer may come after the caller's copy changed.
  resolver.resolve(target.host, [target, context, rule = std::move(rule),
                                 done = std::move(done)](const ResolveResult& result) {
    Verdict verdict = judge_resolution(target, result, context);
    if (verdict.allowed) verdict.reason = "allowed by " + rule;
    done(std::move(verdict));
  });
}

}  // namespace oarbank::proxy
