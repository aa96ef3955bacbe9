// Log lines are one JSON object each, with every field.
#include "proxy/proxy_log.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "proxy/http_refusal.hpp"

namespace oarbank::proxy {
namespace {

TEST(ProxyLog, DecisionLine) {
  DecisionRecord r;
  r.module = "m1";
  r.client = "127.0.0.1:5000";
  r.method = "CONNECT";
  r.destination = "example.com:443";
  r.addresses = {"93.184.216.34"};
  r.status = 403;
  r.reason = "bad \xff\xfe bytes";  // invalid UTF-8 from a client must not break the line
  const std::string line = decision_line(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["event"], "decision");
  EXPECT_EQ(j["module"], "m1");
  EXPECT_EQ(j["verdict"], "refuse");
  EXPECT_EQ(j["status"], 403);
  EXPECT_EQ(j["addresses"][0], "93.184.216.34");
  EXPECT_TRUE(j["time"].is_string());
  r.allowed = true;
  EXPECT_TRUE(nlohmann::json::parse(decision_line(r))["status"].is_null());
}

// Attack review: a module refused in a loop writes one line a second per distinct refusal,
// not one per refusal; every refusal is still counted in the lines.
TEST(RefusalRepeats, IdenticalRefusalsWithinASecondAreOneLineWithACount) {
  using namespace std::chrono_literals;
  const auto t0 = RefusalRepeats::Clock::time_point{} + 100s;
  DecisionRecord r;
  r.module = "m1";
  r.client = "10.0.0.2:40000";
  r.method = "CONNECT";
  r.destination = "192.0.2.9:443";
  r.status = 403;
  r.reason = "192.0.2.9:443 is not on the module's egress allowlist";
  RefusalRepeats repeats;
  EXPECT_TRUE(repeats.due(t0).empty());
  EXPECT_TRUE(repeats.admit(r, t0));  // the first: logged at once
  for (int i = 1; i < 2000; ++i) {
    r.client = "10.0.0.2:" + std::to_string(40000 + i);  // each from a port of its own
    const auto at = t0 + i * 400us;                      // 2,000 in 0.8 s
    EXPECT_TRUE(repeats.due(at).empty());
    EXPECT_FALSE(repeats.admit(r, at));
  }
  // Another destination, or another module, or another reason, is a refusal of its own.
  DecisionRecord other = r;
  other.destination = "192.0.2.10:443";
  EXPECT_TRUE(repeats.admit(other, t0 + 900ms));
  other = r;
  other.module = "m2";
  EXPECT_TRUE(repeats.admit(other, t0 + 900ms));
  other = r;
  other.reason = "too many concurrent connections";
  other.status = 503;
  EXPECT_TRUE(repeats.admit(other, t0 + 900ms));
  // The second is over: the 1,999 after the first are one line, the last as its record.
  auto due = repeats.due(t0 + 1s);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].count, 1999u);
  EXPECT_EQ(due[0].record.client, "10.0.0.2:41999");
  const auto line = nlohmann::json::parse(decision_line(due[0].record, due[0].count));
  EXPECT_EQ(line["repeated"], 1999);
  EXPECT_EQ(line["verdict"], "refuse");
  EXPECT_FALSE(nlohmann::json::parse(decision_line(r)).contains("repeated"));
  // Still refused: counted on, second by second, never a line each.
  EXPECT_FALSE(repeats.admit(r, t0 + 1500ms));
  EXPECT_FALSE(repeats.admit(r, t0 + 1600ms));
  due = repeats.due(t0 + 2100ms);
  // The three refused once in their second are forgotten; the loop's count is one line.
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].count, 2u);
  // A second with none: forgotten, and the next one is logged at once.
  EXPECT_TRUE(repeats.due(t0 + 3100ms).empty());
  EXPECT_TRUE(repeats.admit(r, t0 + 3200ms));
  // The log's end writes what is still counted.
  EXPECT_FALSE(repeats.admit(r, t0 + 3300ms));
  due = repeats.flush();
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].count, 1u);
  EXPECT_TRUE(repeats.flush().empty());
}

// Session 15's attack review: refusals to a new destination each were a line each. Past 20
// distinct ones of a module in a second, the rest are one count for that module, its last as
// the record with a reason that says so; another module's are its own.
TEST(RefusalRepeats, DistinctRefusalsPastTheBoundAreFoldedForTheModule) {
  using namespace std::chrono_literals;
  RefusalRepeats repeats;
  const auto t0 = RefusalRepeats::Clock::time_point{} + std::chrono::hours(1);
  DecisionRecord r;
  r.module = "m";
  r.method = "GET";
  r.status = 403;
  r.reason = "not on the module's egress allowlist";
  for (int i = 0; i < 50; ++i) {
    r.destination = "x" + std::to_string(i) + ".test:80";
    const auto at = t0 + i * 1ms;
    EXPECT_TRUE(repeats.due(at).empty());
    EXPECT_EQ(repeats.admit(r, at), i < 20) << i;
  }
  DecisionRecord other = r;
  other.module = "m2";
  EXPECT_TRUE(repeats.admit(other, t0 + 60ms));
  auto due = repeats.due(t0 + 1100ms);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].count, 30u);
  EXPECT_EQ(due[0].record.destination, "x49.test:80");
  EXPECT_EQ(due[0].record.reason,
            "folded with the other refusals of this module past 20 distinct ones a second; the "
            "last: not on the module's egress allowlist");
  // A new second: logged at once again.
  r.destination = "y.test:80";
  EXPECT_TRUE(repeats.admit(r, t0 + 1200ms));
}

// ProxyLog itself: the lines a sink gets for a burst, the count written at the end.
TEST(RefusalRepeats, TheLogWritesTheFirstLineAndTheCountAtItsEnd) {
  std::vector<std::string> lines;
  ProxyLog log([&lines](std::string_view line) { lines.emplace_back(line); });
  {
    DecisionRecord r;
    r.module = "m1";
    r.destination = "192.0.2.9:443";
    r.status = 403;
    r.reason = "not allowed";
    for (int i = 0; i < 500; ++i) log.decision(r);
    DecisionRecord allowed = r;
    allowed.allowed = true;
    log.decision(allowed);  // allowed: a line each, up to 100 of a module's a second
    log.decision(allowed);
    EXPECT_EQ(lines.size(), 3u);
  }
  log.flush();  // the proxy's loop ended
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(nlohmann::json::parse(lines[3])["repeated"], 499);
}

// Session 18's attack review: connections to an allowed destination that is down wrote two
// lines each (the decision, the failed close), about 0.5 MB a second at the accept pacing's
// most. Each is a line up to 100 of a module's a second; past that each destination's first is
// still a line and its repeats one count a second per kind (a closed line's bytes summed).
TEST(ProxyLog, AllowedAndClosedPastTheBudgetAreCountedPerDestination) {
  std::vector<std::string> lines;
  ProxyLog log([&lines](std::string_view line) { lines.emplace_back(line); });
  DecisionRecord allowed;
  allowed.module = "m1";
  allowed.method = "CONNECT";
  allowed.destination = "192.0.2.1:443";
  allowed.allowed = true;
  allowed.reason = "allowed by 192.0.2.1:443";
  ClosedRecord closed;
  closed.module = "m1";
  closed.method = "CONNECT";
  closed.destination = "192.0.2.1:443";
  closed.outcome = "connect failed";
  closed.status = 502;
  closed.bytes_up = 3;
  for (int i = 0; i < 1000; ++i) {
    allowed.client = closed.client = "127.0.0.1:" + std::to_string(30000 + i);
    log.decision(allowed);
    log.closed(closed);
  }
  // 100 of each a line, then the first of the destination's repeats a line of its own.
  EXPECT_EQ(lines.size(), 202U);
  // Past the budget, another destination is still named (the review of the diff: one fold for
  // every destination hid it), and another module has a budget of its own.
  DecisionRecord elsewhere = allowed;
  elsewhere.destination = "198.51.100.7:443";
  elsewhere.reason = "allowed by 198.51.100.7:443";
  log.decision(elsewhere);
  DecisionRecord other = allowed;
  other.module = "m2";
  log.decision(other);
  ASSERT_EQ(lines.size(), 204U);
  EXPECT_EQ(nlohmann::json::parse(lines[202])["destination"], "198.51.100.7:443");
  log.flush();
  ASSERT_EQ(lines.size(), 206U);
  const auto decisions = nlohmann::json::parse(lines[204]);
  EXPECT_EQ(decisions["event"], "decision");
  EXPECT_EQ(decisions["verdict"], "allow");
  EXPECT_EQ(decisions["destination"], "192.0.2.1:443");
  EXPECT_EQ(decisions["repeated"], 899);
  EXPECT_EQ(decisions["client"], "127.0.0.1:30999");
  const auto closes = nlohmann::json::parse(lines[205]);
  EXPECT_EQ(closes["event"], "closed");
  EXPECT_EQ(closes["repeated"], 899);
  EXPECT_EQ(closes["bytes_up"], 899 * 3);
  EXPECT_EQ(closes["outcome"], "connect failed");
  // Each line below the budget is a connection's own, with its own client.
  EXPECT_EQ(nlohmann::json::parse(lines[0])["client"], "127.0.0.1:30000");
  EXPECT_FALSE(nlohmann::json::parse(lines[1]).contains("repeated"));
}

// Past the budget and past 20 destinations in a second, the module's others are one folded
// line (a wildcard entry lets a module choose a new name each time).
TEST(ProxyLog, ManyAllowedDestinationsPastTheBudgetAreFolded) {
  std::vector<std::string> lines;
  ProxyLog log([&lines](std::string_view line) { lines.emplace_back(line); });
  DecisionRecord allowed;
  allowed.module = "m1";
  allowed.method = "CONNECT";
  allowed.allowed = true;
  allowed.reason = "allowed by *.example.com:443";
  for (int i = 0; i < 500; ++i) {
    allowed.destination = "n" + std::to_string(i) + ".example.com:443";
    log.decision(allowed);
  }
  EXPECT_EQ(lines.size(), 120U);  // 100, then 20 more destinations
  log.flush();
  ASSERT_EQ(lines.size(), 121U);
  const auto folded = nlohmann::json::parse(lines[120]);
  EXPECT_EQ(folded["repeated"], 380);
  EXPECT_NE(folded["reason"].get<std::string>().find(
                "folded with the other allowed connections of this module past 20 distinct ones"),
            std::string::npos)
      << folded.dump();
}

TEST(ProxyLog, ClosedLine) {
  ClosedRecord r;
  r.module = "m1";
  r.destination = "example.com:443";
  r.address = "93.184.216.34:443";
  r.bytes_up = 10;
  r.bytes_down = 20;
  r.duration_ms = 5;
  r.outcome = "closed";
  const auto j = nlohmann::json::parse(closed_line(r));
  EXPECT_EQ(j["event"], "closed");
  EXPECT_EQ(j["bytes_up"], 10);
  EXPECT_EQ(j["bytes_down"], 20);
  EXPECT_EQ(j["duration_ms"], 5);
  EXPECT_EQ(j["address"], "93.184.216.34:443");
  for (const char* key : {"time", "module", "client", "method", "destination", "outcome", "status",
                          "upstream_status", "reason"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
}

TEST(HttpRefusal, ReasonInTheBody) {
  const std::string response =
      refusal_response(403, "evil.com:443 is not allowed\r\nInjected: yes");
  EXPECT_TRUE(response.starts_with("HTTP/1.1 403 Forbidden\r\n"));
  EXPECT_NE(response.find("evil.com:443 is not allowed??Injected: yes\n"), std::string::npos);
  EXPECT_EQ(response.find("\r\nInjected"), std::string::npos);
  EXPECT_NE(response.find("Connection: close\r\n"), std::string::npos);
}

}  // namespace
}  // namespace oarbank::proxy
