// Issue 16: the proxy's refusals as one line each for a terminal (src/proxy/proxy_summary.hpp).
#include "proxy/proxy_summary.hpp"

#include <gtest/gtest.h>

namespace oarbank::proxy {
namespace {

TEST(ProxySummary, ARefusalIsOneLineTheFirstSaysWhereTheJsonLogIs) {
  const std::string line =
      R"({"time":"t","event":"decision","module":"m","client":"127.0.0.1:5","method":"CONNECT",)"
      R"("destination":"evil.example:443","addresses":[],"verdict":"refuse","status":403,)"
      R"("reason":"evil.example:443 is not in the module's egress allowlist"})";
  EXPECT_EQ(proxy_refusal_summary(line, false),
            "egress proxy refused CONNECT evil.example:443 (403): evil.example:443 is not in the "
            "module's egress allowlist");
  EXPECT_EQ(proxy_refusal_summary(line, true),
            "egress proxy refused CONNECT evil.example:443 (403): evil.example:443 is not in the "
            "module's egress allowlist (one line per refusal on a terminal; --proxy-log FILE "
            "keeps every JSON line)");
  // The proxy's line for repeated refusals (docs/proxy.md): one line, with the count.
  std::string repeated = line;
  repeated.insert(repeated.size() - 1, R"(,"repeated":1999)");
  EXPECT_EQ(proxy_refusal_summary(repeated, false),
            "egress proxy refused CONNECT evil.example:443 (403): evil.example:443 is not in the "
            "module's egress allowlist (repeated 1999 times in a second)");
}

TEST(ProxySummary, AHeadThatCouldNotBeReadAndClientBytesAreShownPrintable) {
  EXPECT_EQ(proxy_refusal_summary(
                R"({"event":"decision","method":null,"destination":null,"verdict":"refuse",)"
                R"("status":400,"reason":"bad request"})",
                false),
            "egress proxy refused a request (no destination) (400): bad request");
  EXPECT_EQ(
      proxy_refusal_summary(R"({"event":"decision","method":"CONNECT","destination":"a\u001bb:1",)"
                            R"("verdict":"refuse","status":403,"reason":"r"})",
                            false),
      "egress proxy refused CONNECT a\\x1bb:1 (403): r");
}

TEST(ProxySummary, AllowedDecisionsClosedConnectionsAndOtherTextAreNotShown) {
  EXPECT_EQ(proxy_refusal_summary(R"({"event":"decision","verdict":"allow","status":null})", true),
            std::nullopt);
  EXPECT_EQ(proxy_refusal_summary(R"({"event":"closed","outcome":"reset","status":502})", true),
            std::nullopt);
  EXPECT_EQ(proxy_refusal_summary("not json", true), std::nullopt);
  EXPECT_EQ(proxy_refusal_summary("[1]", true), std::nullopt);
}

}  // namespace
}  // namespace oarbank::proxy
