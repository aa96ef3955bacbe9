// Issue 16: the "did you mean" of unknown names (policy/suggest.hpp).
#include "policy/suggest.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace oarbank {
namespace {

const std::vector<std::string> kFields = {"version", "bundle", "runtime", "tools", "work",
                                          "data",    "temp",   "egress",  "net",   "broker"};
const std::vector<std::string> kCommands = {"sandbox-exec",  "sandbox-run",    "sandbox-ctl",
                                            "sandbox-check", "sandbox-report", "egress-proxy"};

TEST(DidYouMean, SlipsFindTheName) {
  EXPECT_EQ(closest_name("egres", kFields), "egress");    // a letter left out
  EXPECT_EQ(closest_name("egresss", kFields), "egress");  // one too many
  EXPECT_EQ(closest_name("bundel", kFields), "bundle");   // two swapped
  EXPECT_EQ(closest_name("Bundle", kFields), "bundle");   // case
  EXPECT_EQ(closest_name("sandbox-rnu", kCommands), "sandbox-run");
  EXPECT_EQ(closest_name("--timout", {"--timeout", "--id", "--config"}), "--timeout");
  EXPECT_EQ(did_you_mean("egres", kFields), "; did you mean \"egress\"?");
}

TEST(DidYouMean, NothingWhenNothingIsClose) {
  EXPECT_EQ(closest_name("colour", kFields), std::nullopt);
  EXPECT_EQ(closest_name("x", kFields), std::nullopt);
  EXPECT_EQ(closest_name("frobnicate", kCommands), std::nullopt);
  EXPECT_EQ(closest_name("", kFields), std::nullopt);
  EXPECT_EQ(closest_name(std::string(1000, 'a'), kFields), std::nullopt);
  EXPECT_EQ(did_you_mean("colour", kFields), "");
  // Two names equally close: no guess.
  EXPECT_EQ(closest_name("sandbox-c", {"sandbox-a", "sandbox-b"}), std::nullopt);
}

}  // namespace
}  // namespace oarbank
