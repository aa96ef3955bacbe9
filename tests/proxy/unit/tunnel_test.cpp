// One direction of a CONNECT tunnel (TunnelPump), driven without the server: a socketpair on
// each side (the "client" and the "upstream"), an io_context of the test's own, and a small
// owner that records what the pump reports. The bytes must arrive whole and in order whether
// they went through the buffer or through splice, the half-close must be passed on, and a
// failed write must name the side.
#include "proxy/tunnel.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <csignal>
#include <memory>
#include <string>
#include <thread>

namespace oarbank::proxy {
namespace {

class RecordingOwner final : public TunnelOwner,
                             public std::enable_shared_from_this<RecordingOwner> {
 public:
  std::shared_ptr<void> hold() override { return shared_from_this(); }
  bool relaying() const override { return failure.empty(); }
  void activity() override { ++activities; }
  void direction_ended() override { ++ended; }
  void direction_failed(const std::string& reason) override { failure = reason; }

  int activities = 0;
  int ended = 0;
  std::string failure;
};

// A pump from `source` (whose other end the test writes) to `sink` (whose other end the test
// reads).
struct PumpRig {
  PumpRig() {
    int client[2];
    int upstream[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, client), 0);
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, upstream), 0);
    writer_fd = client[0];
    reader_fd = upstream[1];
    // Asio takes the descriptors as they are: it never asks which family a socket is.
    source.assign(asio::ip::tcp::v4(), client[1]);
    sink.assign(asio::ip::tcp::v4(), upstream[0]);
    shared.large_pipes = &large_pipes;
  }
  ~PumpRig() {
    if (writer_fd >= 0) ::close(writer_fd);
    if (reader_fd >= 0) ::close(reader_fd);
  }

  asio::io_context io;
  asio::ip::tcp::socket source{io};
  asio::ip::tcp::socket sink{io};
  int writer_fd = -1;
  int reader_fd = -1;
  std::size_t large_pipes = 0;
  TunnelShared shared;
  RelayBuffer buffer;
  std::uint64_t relayed = 0;
  std::shared_ptr<RecordingOwner> owner = std::make_shared<RecordingOwner>();
  TunnelPump pump{*owner, shared, source, sink, buffer, relayed, "client", "upstream"};
};

// Bytes of a pattern that shows a lost, repeated or reordered block.
std::string pattern(std::size_t size) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 7 + i / 4096) & 0xff);
  return bytes;
}

// Writes `bytes` then half-closes, on a thread of its own, while the test runs the pump and
// reads the other side to its end.
std::string relay_through(PumpRig& rig, const std::string& bytes) {
  std::thread writer([&] {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::write(rig.writer_fd, bytes.data() + sent, bytes.size() - sent);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    ::shutdown(rig.writer_fd, SHUT_WR);
  });
  std::string received;
  std::thread reader([&] {
    char chunk[65536];
    for (;;) {
      const ssize_t n = ::read(rig.reader_fd, chunk, sizeof chunk);
      if (n <= 0) break;
      received.append(chunk, static_cast<std::size_t>(n));
    }
  });
  rig.pump.start();
  rig.io.run();  // returns when the pump has nothing more pending: its source has ended
  writer.join();
  reader.join();
  return received;
}

TEST(TunnelPump, SmallMessagesGoThroughTheBufferAndTheHalfCloseIsPassedOn) {
  PumpRig rig;
  const std::string bytes = "ClientHello";
  EXPECT_EQ(relay_through(rig, bytes), bytes);  // the reader saw the end: a half-close
  EXPECT_EQ(rig.owner->ended, 1);
  EXPECT_TRUE(rig.pump.ended());
  EXPECT_FALSE(rig.pump.splicing());
  EXPECT_EQ(rig.relayed, bytes.size());
  EXPECT_GT(rig.owner->activities, 0);
  EXPECT_TRUE(rig.owner->failure.empty());
}

TEST(TunnelPump, BulkTurnsToSpliceAndArrivesWhole) {
  PumpRig rig;
  // More than one 4 MiB turn, so the pump also yields to the loop and comes back.
  const std::string bytes = pattern(9 * 1024 * 1024 + 123);
  const std::string received = relay_through(rig, bytes);
  EXPECT_EQ(received.size(), bytes.size());
  EXPECT_TRUE(received == bytes);
  EXPECT_TRUE(rig.pump.splicing());
  EXPECT_EQ(rig.buffer.size(), 0u);  // the pipe holds the bytes: the buffer was given back
  EXPECT_EQ(rig.relayed, bytes.size());
  EXPECT_EQ(rig.owner->ended, 1);
  EXPECT_EQ(rig.large_pipes, 1u);  // a 1 MiB pipe, counted against the server's budget
  rig.pump.close();
  EXPECT_EQ(rig.large_pipes, 0u);
}

TEST(TunnelPump, BulkStaysInTheBufferWhenCopyingIsAsked) {
  PumpRig rig;
  rig.shared.by_copy = true;
  const std::string bytes = pattern(1024 * 1024 + 5);
  const std::string received = relay_through(rig, bytes);
  EXPECT_TRUE(received == bytes);
  EXPECT_FALSE(rig.pump.splicing());
  EXPECT_EQ(rig.relayed, bytes.size());
  EXPECT_EQ(rig.owner->ended, 1);
}

TEST(TunnelPump, BulkStaysInTheBufferAfterPipesRanOut) {
  PumpRig rig;
  rig.shared.no_pipes = true;  // the other direction could not get a pipe
  const std::string bytes = pattern(512 * 1024);
  EXPECT_TRUE(relay_through(rig, bytes) == bytes);
  EXPECT_FALSE(rig.pump.splicing());
}

TEST(TunnelPump, AFailedWriteNamesTheDestination) {
  // The proxy ignores SIGPIPE (proxy_server.cpp): so does this test, for splice's sake.
  const auto previous = std::signal(SIGPIPE, SIG_IGN);
  PumpRig rig;
  ::close(rig.reader_fd);  // the upstream has gone
  rig.reader_fd = -1;
  ASSERT_EQ(::write(rig.writer_fd, "x", 1), 1);
  rig.pump.start();
  rig.io.run();
  std::signal(SIGPIPE, previous);
  EXPECT_EQ(rig.owner->failure.rfind("upstream: ", 0), 0u) << rig.owner->failure;
  EXPECT_EQ(rig.owner->ended, 0);
  EXPECT_EQ(rig.relayed, 0u);
}

TEST(TunnelPump, AFailedSpliceNamesTheDestination) {
  const auto previous = std::signal(SIGPIPE, SIG_IGN);
  PumpRig rig;
  // Bulk turns the pump to splice; the upstream goes away part of the way through.
  const std::string bytes = pattern(4 * 1024 * 1024);
  std::thread writer([&] {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::write(rig.writer_fd, bytes.data() + sent, bytes.size() - sent);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
  });
  std::thread reader([&] {
    char chunk[65536];
    std::size_t got = 0;
    while (got < 256 * 1024) {
      const ssize_t n = ::read(rig.reader_fd, chunk, sizeof chunk);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    ::close(rig.reader_fd);
    rig.reader_fd = -1;
  });
  rig.pump.start();
  rig.io.run();
  reader.join();
  rig.source.close();  // frees the writer if it is blocked (EPIPE)
  writer.join();
  std::signal(SIGPIPE, previous);
  EXPECT_EQ(rig.owner->failure.rfind("upstream: ", 0), 0u) << rig.owner->failure;
  EXPECT_TRUE(rig.pump.splicing());
  EXPECT_EQ(rig.owner->ended, 0);
}

TEST(TunnelPump, ASourceThatClosesAtOnceEndsTheDirection) {
  PumpRig rig;
  ::close(rig.writer_fd);
  rig.writer_fd = -1;
  rig.pump.start();
  rig.io.run();
  // A unix socket's closed peer reads as the end of the stream, as a TCP FIN does.
  EXPECT_EQ(rig.owner->ended, 1);
  EXPECT_TRUE(rig.owner->failure.empty());
}

}  // namespace
}  // namespace oarbank::proxy
