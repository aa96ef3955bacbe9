// sandbox-run's seccomp listener starts its thread with the first refused call, not with the
// run (issue 11, launch cost): until then the supervisor polls it. Played here with a pipe
// standing in for the listener (readable: a call waits; hung up: no process uses the filter).
#include "supervise/denial_listener.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include "plan/seccomp_rules.hpp"
#include "supervise/denial_table.hpp"

namespace oarbank {
namespace {

struct Pipe {
  Pipe() { EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0); }
  int fds[2] = {-1, -1};
};

// Attack review: at most kCalls answers per kWindow; the call that fills a window waits for its
// end, and the next window starts afresh.
TEST(RefusalPace, AtMostKCallsPerWindow) {
  using namespace std::chrono_literals;
  RefusalPace pace;
  const auto start = std::chrono::steady_clock::now();
  for (std::uint32_t i = 1; i < RefusalPace::kCalls; ++i) {
    EXPECT_EQ(pace.answered(start + 1ms), 0ns) << i;
  }
  // The window began with the first call: the full window is left of it.
  EXPECT_EQ(pace.answered(start + 1ms), RefusalPace::kWindow);
  EXPECT_EQ(pace.answered(start + 41ms), RefusalPace::kWindow - 40ms);
  // The next window: free again.
  EXPECT_EQ(pace.answered(start + 1ms + RefusalPace::kWindow), 0ns);
  // A slow caller never waits.
  RefusalPace slow;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(slow.answered(start + i * (RefusalPace::kWindow / 100)), 0ns) << i;
  }
}

TEST(SeccompListenerLazy, NoThreadUntilACallWaitsThenTheThreadServesIt) {
  DenialTable table;
  SeccompListener listener(seccomp::FilterVariant{}, table);
  EXPECT_FALSE(listener.start(UniqueFd()));  // nothing received: nothing to serve
  EXPECT_EQ(listener.waiting_fd(), -1);
  Pipe pipe;
  const int read_end = pipe.fds[0];
  UniqueFd write_end(pipe.fds[1]);
  ASSERT_TRUE(listener.start(UniqueFd(read_end)));
  EXPECT_TRUE(listener.served());
  // No call waits: the supervisor polls the listener itself.
  EXPECT_EQ(listener.waiting_fd(), read_end);
  listener.serve_waiting();
  EXPECT_EQ(listener.waiting_fd(), read_end);
  // A call waits: the thread takes over (the supervisor polls it no more).
  ASSERT_EQ(::write(write_end.get(), "x", 1), 1);
  listener.serve_waiting();
  EXPECT_EQ(listener.waiting_fd(), -1);
  EXPECT_TRUE(listener.served());
  listener.stop();
  EXPECT_EQ(listener.waiting_fd(), -1);
}

TEST(SeccompListenerLazy, AHangUpAloneEndsThePollingWithoutAThread) {
  DenialTable table;
  SeccompListener listener(seccomp::FilterVariant{}, table);
  Pipe pipe;
  const int read_end = pipe.fds[0];
  ASSERT_TRUE(listener.start(UniqueFd(read_end)));
  ::close(pipe.fds[1]);
  pollfd pfd{read_end, POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 0), 1);
  EXPECT_EQ(pfd.revents & POLLIN, 0);
  listener.on_ready(pfd.revents);
  EXPECT_EQ(listener.waiting_fd(), -1);
  listener.stop();
}

}  // namespace
}  // namespace oarbank
