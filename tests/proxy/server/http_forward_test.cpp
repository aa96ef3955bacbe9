// Forwarding absolute-form requests on loopback: keep-alive to the client with every request
// decided on its own, pipelined requests served in order, Node's Host idiom, and the framing
// defects of issue 13 as an upstream receives them.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <mutex>
#include <vector>

#include "test_support.hpp"

namespace oarbank::proxy::testing {
namespace {

// Everything one upstream connection received: the head, then what arrives within a moment.
std::string read_request(int fd) {
  std::string got = recv_until(fd, "\r\n\r\n");
  timeval tv{0, 200000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  got += recv_all(fd);
  return got;
}

struct Recorder {
  std::mutex lock;
  std::vector<std::string> seen;  // one entry per upstream connection
  void add(std::string request) {
    std::lock_guard<std::mutex> guard(lock);
    seen.push_back(std::move(request));
  }
};

std::string url(std::uint16_t port, const std::string& path) {
  return "http://127.0.0.1:" + std::to_string(port) + path;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

TEST(HttpForward, KeepAliveDecidesEachRequestOnItsOwn) {
  Recorder recorder;
  Upstream upstream(
      [&](int fd) {
        recorder.add(read_request(fd));
        send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\none");
      },
      2);
  const std::uint16_t denied_port = unused_port();
  Proxy proxy(quick_settings(), {ip_entry("127.0.0.1", upstream.port)});
  const int fd = connect_tcp(proxy.port);
  send_all(fd, "GET " + url(upstream.port, "/1") + " HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n");
  EXPECT_EQ(recv_until(fd, "one"), "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none");
  send_all(fd, "GET " + url(upstream.port, "/2") + " HTTP/1.1\r\n\r\n");
  EXPECT_EQ(recv_until(fd, "one"), "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none");
  // The third, on the same connection, to a destination not on the allowlist.
  send_all(fd, "GET " + url(denied_port, "/3") + " HTTP/1.1\r\n\r\n");
  const std::string refused = recv_all(fd);  // a refusal closes the connection
  ::close(fd);
  EXPECT_EQ(status_of(refused), 403) << refused;
  ASSERT_EQ(recorder.seen.size(), 2u);
  EXPECT_TRUE(recorder.seen[0].starts_with(
      "GET /1 HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(upstream.port) + "\r\n"))
      << recorder.seen[0];
  EXPECT_TRUE(recorder.seen[1].starts_with("GET /2 HTTP/1.1\r\n")) << recorder.seen[1];
  const auto decisions = proxy.wait_for_log("decision", 3);
  ASSERT_EQ(decisions.size(), 3u);
  EXPECT_EQ(decisions[0]["verdict"], "allow");
  EXPECT_EQ(decisions[1]["verdict"], "allow");
  EXPECT_EQ(decisions[2]["verdict"], "refuse");
  EXPECT_EQ(decisions[2]["destination"], "127.0.0.1:" + std::to_string(denied_port));
  const auto closed = proxy.wait_for_log("closed", 2);
  ASSERT_EQ(closed.size(), 2u);
  EXPECT_EQ(closed[0]["upstream_status"], 200);
  EXPECT_EQ(closed[0]["outcome"], "closed");
}

TEST(HttpForward, PipelinedRequestsAreServedInOrderEachDecided) {
  Recorder recorder;
  Upstream upstream(
      [&](int fd) {
        const std::string got = read_request(fd);
        recorder.add(got);
        const auto space = got.find(' ');
        const std::string body = got.substr(space + 1, got.find(' ', space + 1) - space - 1);
        send_all(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                         std::to_string(body.size()) + "\r\n" + body + "\r\n0\r\n\r\n");
      },
      2);
  const std::uint16_t denied_port = unused_port();
  Proxy proxy(quick_settings(), {ip_entry("127.0.0.1", upstream.port)});
  const int fd = connect_tcp(proxy.port);
  // Three requests in one write: a body, a second request, then one to a denied destination.
  send_all(fd, "POST " + url(upstream.port, "/a") +
                   " HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
                   "GET " +
                   url(upstream.port, "/b") +
                   " HTTP/1.1\r\n\r\n"
                   "GET " +
                   url(denied_port, "/c") + " HTTP/1.1\r\n\r\n");
  const std::string responses = recv_all(fd);
  ::close(fd);
  EXPECT_EQ(
      responses.find("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n/a\r\n0\r\n\r\n"
                     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n/b\r\n0\r\n\r\n"
                     "HTTP/1.1 403 "),
      0u)
      << responses;
  ASSERT_EQ(recorder.seen.size(), 2u);
  // Each upstream connection carried exactly one request, whole.
  EXPECT_TRUE(recorder.seen[0].starts_with("POST /a ")) << recorder.seen[0];
  EXPECT_TRUE(recorder.seen[0].ends_with("\r\n\r\nhello")) << recorder.seen[0];
  EXPECT_TRUE(recorder.seen[1].starts_with("GET /b ")) << recorder.seen[1];
  for (const auto& seen : recorder.seen) EXPECT_EQ(count(seen, "HTTP/1.1\r\n"), 1u) << seen;
}

TEST(HttpForward, ConnectionCloseAndDoubtfulFramingCloseTheClient) {
  Upstream upstream(
      [&](int fd) {
        read_request(fd);
        // No length: the body runs to the close.
        send_all(fd, "HTTP/1.1 200 OK\r\n\r\nuntil close");
      },
      2);
  Proxy proxy(quick_settings(), {ip_entry("127.0.0.1", upstream.port)});
  int fd = connect_tcp(proxy.port);
  send_all(fd, "GET " + url(upstream.port, "/") + " HTTP/1.1\r\n\r\n");
  EXPECT_EQ(recv_all(fd), "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close");
  ::close(fd);
  fd = connect_tcp(proxy.port);
  send_all(fd, "GET " + url(upstream.port, "/") + " HTTP/1.0\r\n\r\n");
  EXPECT_EQ(recv_all(fd), "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close");
  ::close(fd);
}

TEST(HttpForward, BytesBeyondTheResponseFramingAreDropped) {
  Upstream upstream([&](int fd) {
    read_request(fd);
    send_all(fd,
             "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
             "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged");
  });
  Proxy proxy(quick_settings(), {ip_entry("127.0.0.1", upstream.port)});
  const int fd = connect_tcp(proxy.port);
  send_all(fd, "GET " + url(upstream.port, "/") + " HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(recv_all(fd), "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
  ::close(fd);
}

TEST(HttpForward, SmuggledTrailerNeverReachesTheUpstream) {
  Recorder recorder;
  Upstream upstream([&](int fd) { recorder.add(read_request(fd)); }, 2);
  Proxy proxy(quick_settings(), {ip_entry("127.0.0.1", upstream.port)});
  // In the head's read: refused with 400 before anything is written upstream.
  int fd = connect_tcp(proxy.port);
  send_all(fd, "POST " + url(upstream.port, "/") +
                   " HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "0\r\nGET /SMUG HTTP/1.1\r\nHost: other.test\r\n\r\n");
  EXPECT_EQ(status_of(recv_all(fd)), 400);
  ::close(fd);
  // Arriving later, a line at a time: the connection is reset; the upstream got the head and
  // the first chunk, never the request line (nor the last-chunk line read with it).
  fd = connect_tcp(proxy.port);
  send_all(fd, "POST " + url(upstream.port, "/") +
                   " HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  send_all(fd, "0\r\nGET /SMUG HTTP/1.1\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  send_all(fd, "Host: other.test\r\n\r\n");
  recv_all(fd);
  ::close(fd);
  const auto closed = proxy.wait_for_log("closed", 2);
  ASSERT_EQ(closed.size(), 2u);
  EXPECT_EQ(closed[1]["outcome"], "malformed request body");
  ASSERT_EQ(recorder.seen.size(), 2u);
  EXPECT_EQ(recorder.seen[0], "");
  EXPECT_TRUE(recorder.seen[1].ends_with("\r\n\r\n1\r\na\r\n")) << recorder.seen[1];
  for (const auto& seen : recorder.seen) EXPECT_EQ(seen.find("SMUG"), std::string::npos);
}

TEST(HttpForward, HeadAndInterimResponsesKeepTheConnection) {
  Recorder recorder;
  Upstream upstream(
      [&](int fd) {
        const std::string got = read_request(fd);
        recorder.add(got);
        if (got.starts_with("HEAD ")) {
          // A length but no body: the response to HEAD ends with its head.
          send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n");
        } else {
          send_all(fd,
                   "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody");
        }
      },
      2);
  Proxy proxy(quick_settings(), {ip_entry("127.0.0.1", upstream.port)});
  const int fd = connect_tcp(proxy.port);
  send_all(fd, "HEAD " + url(upstream.port, "/h") + " HTTP/1.1\r\n\r\n");
  EXPECT_EQ(recv_until(fd, "\r\n\r\n"), "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n");
  send_all(fd, "GET " + url(upstream.port, "/g") + " HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(recv_all(fd),
            "HTTP/1.1 100 Continue\r\n\r\n"
            "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody");
  ::close(fd);
  ASSERT_EQ(recorder.seen.size(), 2u);
  EXPECT_TRUE(recorder.seen[1].starts_with("GET /g ")) << recorder.seen[1];
}

TEST(HttpForward, AnIdleKeptConnectionClosesSilentlyAPartialHeadGets504) {
  Upstream upstream(
      [&](int fd) {
        read_request(fd);
        send_all(fd, "HTTP/1.1 204 No Content\r\n\r\n");
      },
      2);
  ProxySettings settings = quick_settings();
  settings.header_read_timeout = std::chrono::milliseconds(300);
  Proxy proxy(settings, {ip_entry("127.0.0.1", upstream.port)});
  int fd = connect_tcp(proxy.port);
  send_all(fd, "GET " + url(upstream.port, "/") + " HTTP/1.1\r\n\r\n");
  // Nothing more asked: closed without an answer after the response.
  EXPECT_EQ(recv_all(fd), "HTTP/1.1 204 No Content\r\n\r\n");
  ::close(fd);
  fd = connect_tcp(proxy.port);
  send_all(fd, "GET " + url(upstream.port, "/") + " HTTP/1.1\r\n\r\nGET http://");
  const std::string both = recv_all(fd);
  ::close(fd);
  EXPECT_TRUE(both.starts_with("HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 504 ")) << both;
  // Two allowed requests, and the 504 of the partial head.
  const auto decisions = proxy.wait_for_log("decision", 3);
  ASSERT_EQ(decisions.size(), 3u);
  EXPECT_EQ(decisions[2]["status"], 504);
}

}  // namespace
}  // namespace oarbank::proxy::testing
