// The decision with a fake resolver: the allowlist first, one resolution, every answer
// checked, and the checked answers are exactly what is to be connected.
#include "proxy/decision.hpp"

#include <gtest/gtest.h>

#include <map>

#include "policy/egress.hpp"
#include "proxy/lookup_budget.hpp"

namespace oarbank::proxy {
namespace {

class FakeResolver : public Resolver {
 public:
  void resolve(const std::string& name, Callback done) override {
    ++calls[name];
    auto it = answers.find(name);
    if (it == answers.end()) {
      ResolveResult result;
      result.status = ResolveResult::Status::NotFound;
      result.error = "NXDOMAIN";
      done(result);
      return;
    }
    done(it->second);
  }
  std::map<std::string, ResolveResult> answers;
  std::map<std::string, int> calls;
};

IpAddress ip(const char* text) { return *parse_ip_address(text); }

ResolveResult ok(std::vector<IpAddress> addresses) {
  ResolveResult r;
  r.status = ResolveResult::Status::Ok;
  r.addresses = std::move(addresses);
  return r;
}

std::vector<EgressDestination> allowlist(std::initializer_list<const char*> entries) {
  std::vector<EgressDestination> out;
  for (const char* e : entries) {
    std::string problem;
    out.push_back(*parse_egress_destination(e, problem));
  }
  return out;
}

Verdict run(const std::string& authority, const std::vector<EgressDestination>& list,
            FakeResolver& resolver, const AddressContext& context = {}) {
  std::string problem;
  auto target = parse_authority(authority, 0, problem);
  EXPECT_TRUE(target) << problem;
  std::optional<Verdict> out;
  decide(*target, list, context, resolver, [&](Verdict v) { out = std::move(v); });
  EXPECT_TRUE(out.has_value());
  return out.value_or(Verdict{});
}

TEST(Decision, NotOnTheAllowlistIsRefusedWithoutResolving) {
  FakeResolver resolver;
  resolver.answers["evil.com"] = ok({ip("93.184.216.34")});
  Verdict v = run("evil.com:443", allowlist({"api.example.com:443"}), resolver);
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.http_status, 403);
  EXPECT_NE(v.reason.find("not on the module's egress allowlist"), std::string::npos);
  EXPECT_TRUE(resolver.calls.empty());
}

TEST(Decision, AllowedNameConnectsToExactlyTheCheckedAnswers) {
  FakeResolver resolver;
  resolver.answers["api.example.com"] = ok({ip("93.184.216.34"), ip("2606:2800:220:1::1")});
  Verdict v = run("api.example.com:443", allowlist({"api.example.com:443"}), resolver);
  EXPECT_TRUE(v.allowed) << v.reason;
  EXPECT_EQ(v.addresses, (std::vector<IpAddress>{ip("93.184.216.34"), ip("2606:2800:220:1::1")}));
  EXPECT_EQ(resolver.calls["api.example.com"], 1);
  EXPECT_NE(v.reason.find("api.example.com:443"), std::string::npos);
}

TEST(Decision, AnyForbiddenAnswerRefuses) {
  FakeResolver resolver;
  resolver.answers["rebind.example.com"] = ok({ip("93.184.216.34"), ip("127.0.0.1")});
  resolver.answers["meta.example.com"] = ok({ip("169.254.169.254")});
  resolver.answers["mapped.example.com"] = ok({ip("93.184.216.34"), ip("::ffff:127.0.0.1")});
  resolver.answers["private.example.com"] = ok({ip("10.0.0.5")});
  const auto list = allowlist({"*.example.com:443"});
  for (const char* name : {"rebind.example.com:443", "meta.example.com:443",
                           "mapped.example.com:443", "private.example.com:443"}) {
    Verdict v = run(name, list, resolver);
    EXPECT_FALSE(v.allowed) << name;
    EXPECT_EQ(v.http_status, 403) << name;
    EXPECT_FALSE(v.addresses.empty()) << "the answers are kept for the log";
  }
  AddressContext private_ok;
  private_ok.allow_private_ranges = true;
  EXPECT_TRUE(run("private.example.com:443", list, resolver, private_ok).allowed);
  EXPECT_FALSE(run("meta.example.com:443", list, resolver, private_ok).allowed);
}

TEST(Decision, NodeAddressIsRefused) {
  FakeResolver resolver;
  resolver.answers["self.example.com"] = ok({ip("198.51.100.9")});
  AddressContext context;
  context.node_addresses = {ip("198.51.100.9")};
  Verdict v = run("self.example.com:443", allowlist({"self.example.com:443"}), resolver, context);
  EXPECT_FALSE(v.allowed);
  EXPECT_NE(v.reason.find("address of this node"), std::string::npos) << v.reason;
}

TEST(Decision, ResolutionFailures) {
  FakeResolver resolver;
  ResolveResult timeout;
  timeout.status = ResolveResult::Status::Timeout;
  resolver.answers["slow.example.com"] = timeout;
  ResolveResult failed;
  failed.status = ResolveResult::Status::Failed;
  failed.error = "SERVFAIL";
  resolver.answers["broken.example.com"] = failed;
  resolver.answers["empty.example.com"] = ok({});
  const auto list = allowlist({"*.example.com:443"});
  EXPECT_EQ(run("slow.example.com:443", list, resolver).http_status, 504);
  EXPECT_EQ(run("broken.example.com:443", list, resolver).http_status, 502);
  EXPECT_EQ(run("missing.example.com:443", list, resolver).http_status, 502);
  EXPECT_EQ(run("empty.example.com:443", list, resolver).http_status, 502);
}

// A literal the node refuses anyway is refused for that, not as "not on the allowlist": the
// refusal names no egress entry to add (--learn proposes the latter's destination).
TEST(Decision, AForbiddenLiteralNotOnTheAllowlistIsRefusedForTheAddress) {
  FakeResolver resolver;
  for (const char* target : {"169.254.169.254:80", "10.0.0.1:443", "[fe80::1]:443"}) {
    Verdict v = run(target, allowlist({"api.example.com:443"}), resolver);
    EXPECT_FALSE(v.allowed) << target;
    EXPECT_EQ(v.http_status, 403) << target;
    EXPECT_EQ(v.reason.find("not on the module's egress allowlist"), std::string::npos)
        << target << ": " << v.reason;
  }
  // A public literal not on the list: as before.
  Verdict v = run("192.0.2.9:443", allowlist({"api.example.com:443"}), resolver);
  EXPECT_NE(v.reason.find("192.0.2.9:443 is not on the module's egress allowlist"),
            std::string::npos)
      << v.reason;
}

TEST(Decision, IpLiteralsAreNotResolvedAndStillChecked) {
  FakeResolver resolver;
  Verdict v = run("192.0.2.7:80", allowlist({"192.0.2.7:80"}), resolver);
  EXPECT_TRUE(v.allowed) << v.reason;
  EXPECT_EQ(v.addresses, std::vector<IpAddress>{ip("192.0.2.7")});
  EXPECT_TRUE(resolver.calls.empty());
  // An entry for a private address is refused unless the node allows private ranges.
  std::vector<EgressDestination> priv = {EgressDestination{"10.0.0.1", 80, false, true}};
  EXPECT_EQ(run("10.0.0.1:80", priv, resolver).http_status, 403);
  // A hand-made entry for loopback (the policy parser refuses it) is still refused.
  std::vector<EgressDestination> loop = {EgressDestination{"127.0.0.1", 80, false, true}};
  EXPECT_EQ(run("127.0.0.1:80", loop, resolver).http_status, 403);
  EXPECT_FALSE(run("[::1]:80", {EgressDestination{"::1", 80, false, true}}, resolver).allowed);
}

// Session 15's attack review: a wildcard entry let a module have any number of distinct names
// looked up (2000 queries in half a second). Past its budget (a burst of 200, then 100 a second)
// a lookup fails at once, naming the bound, and the resolver is not asked.
TEST(LookupBudget, ABurstThenARateAndNothingAskedPastIt) {
  LookupBucket bucket;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(bucket.take(t0)) << i;
  EXPECT_FALSE(bucket.take(t0));
  EXPECT_TRUE(bucket.take(t0 + std::chrono::milliseconds(10)));  // one more token
  EXPECT_FALSE(bucket.take(t0 + std::chrono::milliseconds(10)));

  FakeResolver inner;
  inner.answers["a.wild.example"] = ok({ip("93.184.216.34")});
  LookupBucket empty;
  const auto now = std::chrono::steady_clock::now();
  while (empty.take(now)) {
  }
  BudgetedResolver resolver(inner, empty);
  std::string problem;
  auto target = parse_authority("a.wild.example:443", 0, problem);
  std::optional<Verdict> out;
  decide(*target, allowlist({"*.wild.example:443"}), {}, resolver,
         [&](Verdict v) { out = std::move(v); });
  ASSERT_TRUE(out.has_value());
  EXPECT_FALSE(out->allowed);
  EXPECT_EQ(out->http_status, 502);
  EXPECT_NE(out->reason.find("more than 100 name lookups a second"), std::string::npos)
      << out->reason;
  EXPECT_TRUE(inner.calls.empty());
}

}  // namespace
}  // namespace oarbank::proxy
