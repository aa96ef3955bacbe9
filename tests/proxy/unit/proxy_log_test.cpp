// Log lines are one JSON object each, with every field.
#include "proxy/proxy_log.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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
