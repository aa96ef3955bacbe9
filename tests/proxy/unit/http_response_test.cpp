// The upstream's response head, rewritten for the client; the chunked body tracker.
#include "proxy/http_response.hpp"

#include <gtest/gtest.h>

#include <string>

#include "proxy/chunked_body.hpp"

namespace oarbank::proxy {
namespace {

TEST(HttpResponse, RewritesHopByHop) {
  const std::string head =
      "HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Hop\r\nKeep-Alive: timeout=5\r\nX-Hop: 1\r\n"
      "Transfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n";
  ResponseParse p = parse_response_head(head + "5\r\nhello\r\n", kMaxResponseHeadBytes);
  ASSERT_EQ(p.status, ResponseParse::Status::Complete) << p.problem;
  EXPECT_EQ(p.head_bytes, head.size());
  EXPECT_EQ(p.status_code, 200);
  EXPECT_FALSE(p.interim);
  EXPECT_EQ(p.rewritten,
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: "
            "text/plain\r\nConnection: close\r\n\r\n");
}

TEST(HttpResponse, InterimAndErrors) {
  ResponseParse c = parse_response_head("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
                                        kMaxResponseHeadBytes);
  ASSERT_EQ(c.status, ResponseParse::Status::Complete);
  EXPECT_TRUE(c.interim);
  EXPECT_EQ(c.rewritten, "HTTP/1.1 100 Continue\r\n\r\n");
  EXPECT_EQ(parse_response_head("HTTP/1.1 204\r\n\r\n", 1024).status,
            ResponseParse::Status::Complete);
  EXPECT_EQ(parse_response_head("HTTP/1.1 101 Switching Protocols\r\n\r\n", 1024).status,
            ResponseParse::Status::Invalid);
  EXPECT_EQ(parse_response_head("HTTP/1.1 200 OK\n\n", 1024).status,
            ResponseParse::Status::Invalid);
  EXPECT_EQ(parse_response_head("HTTP/2 200 OK\r\n\r\n", 1024).status,
            ResponseParse::Status::Invalid);
  EXPECT_EQ(parse_response_head("HTTP/1.1 20 OK\r\n\r\n", 1024).status,
            ResponseParse::Status::Invalid);
  EXPECT_EQ(parse_response_head("HTTP/1.1 099 OK\r\n\r\n", 1024).status,
            ResponseParse::Status::Invalid);
  EXPECT_EQ(parse_response_head("HTTP/1.1 200 OK\r\n", 1024).status,
            ResponseParse::Status::Incomplete);
  EXPECT_EQ(parse_response_head("HTTP/1.1 200 OK\r\nX: " + std::string(2000, 'a'), 1024).status,
            ResponseParse::Status::Invalid);
}

std::size_t feed(ChunkedBodyTracker& t, const std::string& data) { return t.consume(data); }

TEST(ChunkedBody, FindsTheEnd) {
  const std::string body =
      "5\r\nhello\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Sum: 1\r\n\r\n";
  ChunkedBodyTracker whole;
  EXPECT_EQ(feed(whole, body + "GET /smuggled HTTP/1.1\r\n\r\n"), body.size());
  EXPECT_TRUE(whole.done());
  // Byte by byte gives the same answer.
  ChunkedBodyTracker bytes;
  std::size_t taken = 0;
  for (char c : body) taken += bytes.consume(std::string_view(&c, 1));
  EXPECT_EQ(taken, body.size());
  EXPECT_TRUE(bytes.done());
  ChunkedBodyTracker empty;
  EXPECT_EQ(feed(empty, "0\r\n\r\nrest"), 5u);
  EXPECT_TRUE(empty.done());
}

TEST(ChunkedBody, RefusesMalformedFraming) {
  for (const char* bad :
       {"x\r\n", "\r\n", "5\nhello\r\n", "5\r\nhelloX\r\n", "5\r\nhello\rX", "-1\r\n",
        "10000000000000000\r\n", "5\r\nhello\r\n0\r\nX\n", "0\r\n\rX", "5 \x01\r\n"}) {
    ChunkedBodyTracker t;
    t.consume(bad);
    EXPECT_TRUE(t.failed()) << bad;
  }
  ChunkedBodyTracker long_ext;
  long_ext.consume("1;" + std::string(5000, 'a'));
  EXPECT_TRUE(long_ext.failed());
  ChunkedBodyTracker long_trailer;
  long_trailer.consume("0\r\nX: " + std::string(20000, 'a'));
  EXPECT_TRUE(long_trailer.failed());
}

}  // namespace
}  // namespace oarbank::proxy
