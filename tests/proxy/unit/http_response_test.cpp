// The upstream's response head, rewritten for the client; the chunked body tracker.
#include "proxy/http_response.hpp"

#include <gtest/gtest.h>

#include <string>

#include "proxy/chunked_body.hpp"
#include "proxy/message_body.hpp"

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

std::size_t feed(ChunkedBodyTracker& t, const std::string& data) { return t.consume(data).taken; }

TEST(ChunkedBody, FindsTheEnd) {
  const std::string body =
      "5\r\nhello\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Sum: 1\r\n\r\n";
  ChunkedBodyTracker whole;
  EXPECT_EQ(feed(whole, body + "GET /smuggled HTTP/1.1\r\n\r\n"), body.size());
  EXPECT_TRUE(whole.done());
  // Byte by byte gives the same answer.
  ChunkedBodyTracker bytes;
  std::size_t taken = 0;
  for (char c : body) taken += bytes.consume(std::string_view(&c, 1)).taken;
  EXPECT_EQ(taken, body.size());
  EXPECT_TRUE(bytes.done());
  ChunkedBodyTracker empty;
  EXPECT_EQ(feed(empty, "0\r\n\r\nrest"), 5u);
  EXPECT_TRUE(empty.done());
}

TEST(ChunkedBody, RefusesMalformedFraming) {
  for (const char* bad : {"x\r\n", "\r\n", "5\nhello\r\n", "5\r\nhelloX\r\n", "5\r\nhello\rX",
                          "-1\r\n", "10000000000000000\r\n", "5\r\nhello\r\n0\r\nX\n", "0\r\n\rX",
                          "5 \x01\r\n", "5;\x01\r\n"}) {
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

// Feeds `body` whole; returns what goes upstream: the bytes relayed as they come, then the
// trailer section once the body is done. Empty when refused.
std::string relayed(const std::string& body, ChunkedBodyTracker& t) {
  const ChunkedStep step = t.consume(body);
  if (t.failed()) return {};
  EXPECT_LE(step.forward, step.taken);
  return body.substr(0, step.forward) + (t.done() ? t.trailer_section() : "");
}

bool refuses(const std::string& body) {
  ChunkedBodyTracker t;
  t.consume(body);
  return t.failed();
}

TEST(ChunkedBody, ChunkSizeLineIsTheSizeThenOnlyExtensions) {
  // Text after the hex digits: a parser that drops inner whitespace reads "1 0" as 0x10. No
  // whitespace at all, as llhttp reads the line (chunked_body.hpp says why).
  for (const char* bad :
       {"1 0\r\n",    "2 junk\r\n",     "0 junk\r\n\r\n",   "1\t0\r\n",         "1 x;a\r\n",
        "0x5\r\n",    "5;\r\n",         "5; \r\n",          "5;=x\r\n",         "5;a=\r\n",
        "5;a b\r\n",  "5;a=\"open\r\n", "5;a=b c\r\n",      "5;a=\"\x7f\"\r\n", "5,a\r\n",
        "1 \r\n",     "1\t\r\n",        "1 ;a\r\n",         "1; a\r\n",         "1;a =b\r\n",
        "1;a= b\r\n", "1;a=b \r\n",     "1;a=\"\\\"\"\r\n", "1;a=b;c\r\n",      "1;a=\"x\"y\r\n"}) {
    EXPECT_TRUE(refuses(bad)) << bad;
  }
  for (const char* good :
       {"1;a\r\na\r\n0\r\n\r\n", "1;a=b\r\na\r\n0\r\n\r\n", "1;a;b=c\r\na\r\n0\r\n\r\n",
        "1;a=\"q ;x\";b=c\r\na\r\n0;last\r\n\r\n", "1;a=\"\"\r\na\r\n0\r\n\r\n"}) {
    ChunkedBodyTracker t;
    EXPECT_EQ(feed(t, good), std::string(good).size()) << good << ": " << t.problem();
    EXPECT_TRUE(t.done()) << good;
  }
  EXPECT_TRUE(valid_chunk_extensions(";a=\"d\";c=b"));
  EXPECT_FALSE(valid_chunk_extensions("a=b"));
}

TEST(ChunkedBody, TrailersMeetTheFieldLineGrammar) {
  // The last-chunk line, then a request line where a trailer should be: refused, and nothing
  // of it was relayed.
  const std::string smuggle = "0\r\nGET /SMUG HTTP/1.1\r\nHost: other.test\r\n\r\n";
  ChunkedBodyTracker t;
  const ChunkedStep step = t.consume(smuggle);
  EXPECT_TRUE(t.failed());
  EXPECT_EQ(step.forward, 0u);
  EXPECT_NE(t.problem().find("trailer"), std::string::npos) << t.problem();
  for (const char* bad :
       {"0\r\nX-A : 1\r\n\r\n", "0\r\nX-A\r\n\r\n", "0\r\nX-A: 1\r\n folded\r\n\r\n",
        "0\r\n\tX-A: 1\r\n\r\n", "0\r\nX-A: 1\nX-B: 2\r\n\r\n", "0\r\nX-A: a\x01b\r\n\r\n",
        "0\r\n: v\r\n\r\n", "0\r\nX(A): 1\r\n\r\n",
        // Fields that frame or route a message are no trailers.
        "0\r\nContent-Length: 5\r\n\r\n", "0\r\nTransfer-Encoding: chunked\r\n\r\n",
        "0\r\nHost: other.test\r\n\r\n", "0\r\nTransfer_Encoding: chunked\r\n\r\n"}) {
    EXPECT_TRUE(refuses(bad)) << bad;
  }
  // Good trailers go on in canonical form; the relayed part stops at the last-chunk line, and the
  // trailers follow once they are all known to be field lines.
  ChunkedBodyTracker good;
  const std::string body = "3\r\nabc\r\n0\r\nX-Sum:   7 \r\nx-other:\r\n\r\nNEXT";
  const ChunkedStep g = good.consume(body);
  EXPECT_TRUE(good.done());
  EXPECT_EQ(g.taken, body.size() - 4);
  EXPECT_EQ(body.substr(0, g.forward), "3\r\nabc\r\n0\r\n");
  EXPECT_EQ(good.trailer_section(), "X-Sum: 7\r\nx-other: \r\n\r\n");
  ChunkedBodyTracker none;
  EXPECT_EQ(relayed("0\r\n\r\n", none), "0\r\n\r\n");
  // Byte by byte, nothing of the trailers is relayed before the end.
  ChunkedBodyTracker bytes;
  std::string out;
  for (std::size_t i = 0; i < body.size() - 4; ++i) {
    const ChunkedStep s1 = bytes.consume(std::string_view(body).substr(i, 1));
    out.append(body.substr(i, s1.forward));
  }
  EXPECT_TRUE(bytes.done());
  EXPECT_EQ(out, "3\r\nabc\r\n0\r\n");
  EXPECT_EQ(bytes.trailer_section(), good.trailer_section());
}

TEST(MessageBody, EndsByItsFraming) {
  MessageBody none = MessageBody::none();
  EXPECT_TRUE(none.done());
  EXPECT_EQ(none.take("GET /").taken, 0u);
  MessageBody length = MessageBody::length(5);
  ChunkedStep s = length.take("helloGET /");
  EXPECT_EQ(s.taken, 5u);
  EXPECT_EQ(s.forward, 5u);
  EXPECT_TRUE(length.done());
  EXPECT_TRUE(MessageBody::length(0).done());
  MessageBody chunked = MessageBody::chunked();
  s = chunked.take("1\r\na\r\n0\r\nT: 1\r\n\r\nGET");
  EXPECT_TRUE(chunked.done());
  EXPECT_EQ(s.taken, 17u);
  EXPECT_EQ(s.forward, 9u);
  EXPECT_EQ(chunked.tail(), "T: 1\r\n\r\n");
  MessageBody bad = MessageBody::chunked();
  bad.take("1 0\r\n");
  EXPECT_TRUE(bad.failed());
  MessageBody until_close = MessageBody::until_close();
  EXPECT_EQ(until_close.take("anything").taken, 8u);
  EXPECT_FALSE(until_close.done());
  EXPECT_TRUE(until_close.ends_at_close());
}

TEST(HttpResponse, FramingDecidesWhetherTheClientConnectionIsKept) {
  ResponseContext keep;
  keep.client_keep_alive = true;
  const auto parse = [&](const std::string& head, ResponseContext context) {
    ResponseParse p = parse_response_head(head, kMaxResponseHeadBytes, context);
    EXPECT_EQ(p.status, ResponseParse::Status::Complete) << head;
    return p;
  };
  ResponseParse p =
      parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n", keep);
  EXPECT_EQ(p.body, BodyFraming::Length);
  EXPECT_EQ(p.content_length, 2u);
  EXPECT_TRUE(p.keep_alive);
  EXPECT_EQ(p.rewritten, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n");
  p = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", keep);
  EXPECT_EQ(p.body, BodyFraming::Chunked);
  EXPECT_TRUE(p.keep_alive);
  p = parse("HTTP/1.1 204 No Content\r\n\r\n", keep);
  EXPECT_EQ(p.body, BodyFraming::None);
  EXPECT_TRUE(p.keep_alive);
  ResponseContext head = keep;
  head.head_request = true;
  p = parse("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", head);
  EXPECT_EQ(p.body, BodyFraming::None);
  // Any doubt about the end: the body runs to the upstream's close, and so does the client's
  // connection.
  for (const char* doubtful :
       {"HTTP/1.1 200 OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n"}) {
    p = parse(doubtful, keep);
    EXPECT_FALSE(p.keep_alive) << doubtful;
    EXPECT_TRUE(p.rewritten.ends_with("Connection: close\r\n\r\n")) << doubtful;
  }
  // A client that did not offer keep-alive gets "Connection: close" whatever the framing.
  p = parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", ResponseContext{});
  EXPECT_FALSE(p.keep_alive);
  EXPECT_TRUE(p.rewritten.ends_with("Connection: close\r\n\r\n"));
}

}  // namespace
}  // namespace oarbank::proxy
