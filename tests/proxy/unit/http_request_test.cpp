// The strict request parser: accepted forms, every refusal class, sizes, smuggling cases, and
// the forwarded head.
#include "proxy/http_request.hpp"

#include <gtest/gtest.h>

#include <string>

namespace oarbank::proxy {
namespace {

constexpr std::size_t kMax = 8192;

RequestParse parse(const std::string& text, std::size_t max = kMax) {
  return parse_request_head(text, max);
}

HttpRequest complete(const std::string& text) {
  RequestParse p = parse(text);
  EXPECT_EQ(p.status, RequestParse::Status::Complete) << text << " -> " << p.problem;
  return p.request;
}

int refused(const std::string& text) {
  RequestParse p = parse(text);
  EXPECT_EQ(p.status, RequestParse::Status::Refused) << text;
  return p.http_status;
}

TEST(HttpRequest, ConnectAuthorityForm) {
  const std::string text =
      "CONNECT Example.COM:443 HTTP/1.1\r\nHost: example.com:443\r\nUser-Agent: curl\r\n\r\nTLS";
  RequestParse p = parse(text);
  ASSERT_EQ(p.status, RequestParse::Status::Complete) << p.problem;
  EXPECT_EQ(p.head_bytes, text.size() - 3);  // "TLS" is tunnel data
  EXPECT_EQ(p.request.form, RequestForm::Connect);
  EXPECT_EQ(p.request.target->host, "example.com");
  EXPECT_EQ(p.request.target->port, 443);
  // HTTP/1.0 CONNECT without Host (Python's http.client)
  EXPECT_EQ(complete("CONNECT example.com:443 HTTP/1.0\r\n\r\n").minor_version, 0);
  // Host without a port names the CONNECT target's host
  complete("CONNECT example.com:8443 HTTP/1.1\r\nHost: example.com\r\n\r\n");
  complete("CONNECT [2001:db8::1]:443 HTTP/1.1\r\nHost: [2001:db8::1]:443\r\n\r\n");
}

TEST(HttpRequest, AbsoluteForm) {
  HttpRequest r =
      complete("GET http://Example.com/a/b?c=d&e=%41 HTTP/1.1\r\nHost: example.com\r\n\r\n");
  EXPECT_EQ(r.form, RequestForm::Absolute);
  EXPECT_EQ(r.target->host, "example.com");
  EXPECT_EQ(r.target->port, 80);
  EXPECT_EQ(r.path, "/a/b?c=d&e=%41");
  EXPECT_EQ(complete("GET http://example.com HTTP/1.1\r\n\r\n").path, "/");
  EXPECT_EQ(complete("GET HTTP://example.com?x HTTP/1.1\r\n\r\n").path, "/?x");
  EXPECT_EQ(complete("GET http://example.com:8080/ HTTP/1.1\r\nHost: example.com:8080\r\n\r\n")
                .target->port,
            8080);
  EXPECT_EQ(complete("POST http://192.0.2.7/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n").content_length,
            5u);
  EXPECT_TRUE(
      complete("POST http://192.0.2.7/ HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n").chunked);
}

TEST(HttpRequest, IncompleteUntilTheEmptyLine) {
  EXPECT_EQ(parse("CONNECT example.com:443 HTTP/1.1\r\nHost: x").status,
            RequestParse::Status::Incomplete);
  EXPECT_EQ(parse("CONNECT example.com:443 HTTP/1.1\r\n\r").status,
            RequestParse::Status::Incomplete);
  EXPECT_EQ(parse("").status, RequestParse::Status::Incomplete);
}

TEST(HttpRequest, LineEndings) {
  EXPECT_EQ(refused("CONNECT example.com:443 HTTP/1.1\n\n"), 400);            // bare LF
  EXPECT_EQ(refused("CONNECT example.com:443 HTTP/1.1\r\nA: b\n\r\n"), 400);  // bare LF in a field
  EXPECT_EQ(refused("CONNECT example.com:443 HTTP/1.1\rX: y\r\n\r\n"), 400);  // bare CR
  EXPECT_EQ(refused("\r\nCONNECT example.com:443 HTTP/1.1\r\n\r\n"), 400);    // leading empty line
  EXPECT_EQ(refused("GET http://a.com/ HTTP/1.1\r\nX: a\rb\r\n\r\n"), 400);
  // A bare LF is refused at once, before the head is complete.
  EXPECT_EQ(refused("CONNECT example.com:443 HTTP/1.1\nHost"), 400);
}

TEST(HttpRequest, ObsFoldAndFieldSyntax) {
  EXPECT_EQ(refused("GET http://a.com/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://a.com/ HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://a.com/ HTTP/1.1\r\nHost : a.com\r\n\r\n"),
            400);  // space before colon
  EXPECT_EQ(refused("GET http://a.com/ HTTP/1.1\r\nNoColon\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://a.com/ HTTP/1.1\r\n: empty-name\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://a.com/ HTTP/1.1\r\nX(y): z\r\n\r\n"), 400);
  static constexpr char kNul[] = "GET http://a.com/ HTTP/1.1\r\nX: a\0b\r\n\r\n";
  EXPECT_EQ(refused(std::string(kNul, sizeof kNul - 1)), 400);
  EXPECT_EQ(refused("GET http://a.com/ HTTP/1.1\r\nX: a\x01\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://a.com/ HTTP/1.1\r\nX: a\x7f\r\n\r\n"), 400);
  HttpRequest r =
      complete("GET http://a.com/ HTTP/1.1\r\nX:  \t padded \t \r\nY:\r\nZ: caf\xc3\xa9\r\n\r\n");
  ASSERT_EQ(r.fields.size(), 3u);
  EXPECT_EQ(r.fields[0].value, "padded");
  EXPECT_EQ(r.fields[1].value, "");
}

TEST(HttpRequest, RequestLine) {
  EXPECT_EQ(refused("CONNECT  example.com:443 HTTP/1.1\r\n\r\n"), 400);  // two spaces
  EXPECT_EQ(refused("CONNECT example.com:443  HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("CONNECT example.com:443 HTTP/1.1 \r\n\r\n"), 400);
  EXPECT_EQ(refused("CONNECT\texample.com:443 HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("CONNECT example.com:443\r\n\r\n"), 400);
  EXPECT_EQ(refused("CONNECT example.com:443 HTTP/2.0\r\n\r\n"), 505);
  EXPECT_EQ(refused("CONNECT example.com:443 HTTP/0.9\r\n\r\n"), 505);
  EXPECT_EQ(refused("CONNECT example.com:443 http/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("CONNECT example.com:443 HTTP/1.10\r\n\r\n"), 400);
  EXPECT_EQ(refused("G@T http://a.com/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://a.com/\x80 HTTP/1.1\r\n\r\n"), 400);
  // Methods are case-sensitive: "connect" is not CONNECT, and is no absolute URI either.
  EXPECT_EQ(refused("connect example.com:443 HTTP/1.1\r\n\r\n"), 400);
}

TEST(HttpRequest, TargetForms) {
  EXPECT_EQ(complete("GET /index.html HTTP/1.1\r\nHost: a.com\r\n\r\n").form, RequestForm::Origin);
  EXPECT_EQ(refused("GET https://a.com/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET ftp://a.com/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("OPTIONS * HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://a.com/#frag HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://user:pw@a.com/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://a.com@evil.com/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://a.com/%zz HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://a.com/\\x HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://2130706433/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://0x7f.1/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://[::1%25lo]/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http:///path HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://a.com:/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("CONNECT example.com HTTP/1.1\r\n\r\n"), 400);  // CONNECT needs a port
  EXPECT_EQ(refused("CONNECT /x HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("CONNECT http://example.com:443 HTTP/1.1\r\n\r\n"), 400);
}

TEST(HttpRequest, HostIsReplacedByTheTarget) {
  // RFC 9112 section 3.2.2: with an absolute-form target the proxy ignores Host and forwards the
  // target's authority; CONNECT's authority is its target. Node's idiom sends the proxy's own
  // address as Host.
  for (const char* text : {"GET http://a.com/x HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n\r\n",
                           "GET http://a.com/x HTTP/1.1\r\nHost: b.com\r\n\r\n",
                           "GET http://a.com/x HTTP/1.1\r\nHost: a.com:81\r\n\r\n",
                           "GET http://a.com/x HTTP/1.1\r\nHost: u@a.com\r\n\r\n",
                           "GET http://a.com/x HTTP/1.1\r\n\r\n"}) {
    const HttpRequest r = complete(text);
    EXPECT_EQ(r.target->authority(), "a.com:80") << text;
    EXPECT_EQ(forwarded_request_head(r),
              "GET /x HTTP/1.1\r\nHost: a.com\r\nConnection: close\r\n\r\n")
        << text;
  }
  EXPECT_EQ(complete("GET http://a.com:81/ HTTP/1.1\r\nHost: a.com\r\n\r\n").target->authority(),
            "a.com:81");
  EXPECT_EQ(
      complete("CONNECT a.com:443 HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n\r\n").target->authority(),
      "a.com:443");
  EXPECT_EQ(complete("CONNECT a.com:443 HTTP/1.1\r\nHost: b.com:443\r\n\r\n").target->authority(),
            "a.com:443");
  // Still refused: two Host fields (RFC 9110 section 7.2), and an unusable target itself.
  EXPECT_EQ(refused("GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\nHost: a.com\r\n\r\n"), 400);
  EXPECT_EQ(refused("CONNECT a.com:443 HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://u@a.com/ HTTP/1.1\r\nHost: a.com\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://a.com:0/ HTTP/1.1\r\nHost: a.com\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://127.1/ HTTP/1.1\r\nHost: a.com\r\n\r\n"), 400);
  EXPECT_EQ(refused("CONNECT a.com HTTP/1.1\r\nHost: a.com:443\r\n\r\n"), 400);
  // In origin form Host is the only destination there is.
  EXPECT_EQ(complete("GET / HTTP/1.1\r\nHost: A.COM.:80\r\n\r\n").target->authority(), "a.com:80");
  EXPECT_EQ(refused("GET / HTTP/1.1\r\nHost: u@a.com\r\n\r\n"), 400);
}

TEST(HttpRequest, FramingLookalikeNamesAreRefused) {
  // CGI and WSGI read '_' as '-': behind them these frame the body the proxy framed otherwise.
  for (const char* name : {"Transfer_Encoding", "transfer_encoding", "Content_Length",
                           "CONTENT_LENGTH", "Content_length"}) {
    const std::string text = std::string("POST http://a.com/ HTTP/1.1\r\nContent-Length: 5\r\n") +
                             name + ": chunked\r\n\r\n";
    EXPECT_EQ(refused(text), 400) << name;
    EXPECT_NE(parse(text).problem.find("'_'"), std::string::npos) << parse(text).problem;
  }
  // PRI is HTTP/2's preface, which llhttp refuses too.
  EXPECT_EQ(refused("PRI http://a.com/ HTTP/1.1\r\n\r\n"), 400);
  // Other names with '_' pass.
  complete("GET http://a.com/ HTTP/1.1\r\nX_Transfer_Encoding: 1\r\nContent_Type: x\r\n\r\n");
  EXPECT_TRUE(is_framing_lookalike("Transfer_Encoding"));
  EXPECT_FALSE(is_framing_lookalike("Transfer-Encoding"));
  EXPECT_FALSE(is_framing_lookalike("Transfer_Encodings"));
}

TEST(HttpRequest, FramingFieldsForwardedCanonically) {
  const HttpRequest padded =
      complete("POST http://a.com/ HTTP/1.1\r\ncontent-length: 005\r\nX: 1\r\n\r\n");
  EXPECT_EQ(*padded.content_length, 5u);
  EXPECT_EQ(
      forwarded_request_head(padded),
      "POST / HTTP/1.1\r\nHost: a.com\r\nX: 1\r\nContent-Length: 5\r\nConnection: close\r\n\r\n");
  const HttpRequest zero = complete("POST http://a.com/ HTTP/1.1\r\nContent-Length: 000\r\n\r\n");
  EXPECT_NE(forwarded_request_head(zero).find("\r\nContent-Length: 0\r\n"), std::string::npos);
  const HttpRequest coding =
      complete("POST http://a.com/ HTTP/1.1\r\ntransfer-encoding:   CHUNKED \r\n\r\n");
  EXPECT_EQ(
      forwarded_request_head(coding),
      "POST / HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
}

TEST(HttpRequest, SmugglingFraming) {
  EXPECT_EQ(
      refused(
          "POST http://a.com/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"),
      400);
  EXPECT_EQ(
      refused("POST http://a.com/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"),
      400);
  EXPECT_EQ(refused("POST http://a.com/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n"), 400);
  EXPECT_EQ(refused("POST http://a.com/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n"), 400);
  EXPECT_EQ(refused("POST http://a.com/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(refused("POST http://a.com/ HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n"), 400);
  EXPECT_EQ(refused("POST http://a.com/ HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"),
            400);
  EXPECT_EQ(refused("POST http://a.com/ HTTP/1.1\r\nContent-Length:\r\n\r\n"), 400);
  EXPECT_EQ(refused("POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: "
                    "chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400);
  EXPECT_EQ(refused("POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
            501);
  EXPECT_EQ(refused("POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: chunked, identity\r\n\r\n"),
            501);
  EXPECT_EQ(refused("POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n"), 501);
  EXPECT_EQ(refused("POST http://a.com/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(refused("POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n"), 400);
  // A Connection field naming the framing fields would strip them on the way upstream.
  EXPECT_EQ(
      refused(
          "POST http://a.com/ HTTP/1.1\r\nContent-Length: 3\r\nConnection: content-length\r\n\r\n"),
      400);
  EXPECT_EQ(refused("POST http://a.com/ HTTP/1.1\r\nConnection: close, Transfer-Encoding\r\n\r\n"),
            400);
  EXPECT_EQ(refused("GET http://a.com/ HTTP/1.1\r\nConnection: host\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET http://a.com/ HTTP/1.1\r\nConnection: a b\r\n\r\n"), 400);
  // CONNECT carries no body.
  EXPECT_EQ(refused("CONNECT a.com:443 HTTP/1.1\r\nContent-Length: 4\r\n\r\n"), 400);
  EXPECT_EQ(refused("CONNECT a.com:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  complete("CONNECT a.com:443 HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
}

TEST(HttpRequest, BoundedSizes) {
  const std::string big_field =
      "GET http://a.com/ HTTP/1.1\r\nX: " + std::string(kMax, 'a') + "\r\n\r\n";
  EXPECT_EQ(parse(big_field).http_status, 431);
  // Refused as soon as the limit is reached, without waiting for the end of the head.
  EXPECT_EQ(
      parse(std::string("GET http://a.com/ HTTP/1.1\r\nX: ") + std::string(kMax, 'a')).http_status,
      431);
  // Exactly at the limit is fine.
  std::string exact = "GET http://a.com/ HTTP/1.1\r\nX: ";
  exact += std::string(kMax - exact.size() - 4, 'a') + "\r\n\r\n";
  ASSERT_EQ(exact.size(), kMax);
  EXPECT_EQ(parse(exact).status, RequestParse::Status::Complete);
  std::string many = "GET http://a.com/ HTTP/1.1\r\n";
  for (std::size_t i = 0; i <= kMaxHeaderFields; ++i) many += "X: y\r\n";
  many += "\r\n";
  EXPECT_EQ(parse(many, 1 << 20).http_status, 400);
}

TEST(HttpRequest, ForwardedHeadStripsHopByHop) {
  HttpRequest r = complete(
      "POST http://Example.com:8080/p?q HTTP/1.1\r\n"
      "Host: example.com:8080\r\n"
      "Connection: keep-alive, X-Secret\r\n"
      "Keep-Alive: timeout=5\r\n"
      "Proxy-Authorization: Basic Zm9vOmJhcg==\r\n"
      "Proxy-Connection: keep-alive\r\n"
      "TE: trailers\r\n"
      "Trailer: X-Checksum\r\n"
      "Upgrade: websocket\r\n"
      "X-Secret: 1\r\n"
      "Content-Length: 3\r\n"
      "Accept: */*\r\n"
      "\r\n");
  EXPECT_EQ(forwarded_request_head(r),
            "POST /p?q HTTP/1.1\r\n"
            "Host: example.com:8080\r\n"
            "Accept: */*\r\n"
            "Content-Length: 3\r\n"
            "Connection: close\r\n\r\n");
  HttpRequest chunked =
      complete("PUT http://a.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(
      forwarded_request_head(chunked),
      "PUT / HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
  HttpRequest old = complete("GET http://[2001:db8::1]:81/ HTTP/1.0\r\n\r\n");
  EXPECT_EQ(forwarded_request_head(old),
            "GET / HTTP/1.0\r\nHost: [2001:db8::1]:81\r\nConnection: close\r\n\r\n");
  // The forwarded head reads back as an origin-form request for the same destination.
  RequestParse back = parse(forwarded_request_head(r));
  ASSERT_EQ(back.status, RequestParse::Status::Complete) << back.problem;
  EXPECT_EQ(back.request.form, RequestForm::Origin);
  EXPECT_EQ(back.request.target, r.target);
  EXPECT_EQ(back.request.content_length, 3u);
}

}  // namespace
}  // namespace oarbank::proxy
