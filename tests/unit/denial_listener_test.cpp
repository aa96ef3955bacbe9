// sandbox-run's seccomp listener starts its thread with the first refused call, not with the
// run (issue 11, launch cost): until then the supervisor polls it. Played here with a pipe
// standing in for the listener (readable: a call waits; hung up: no process uses the filter).
#include "supervise/denial_listener.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/nsfs.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "apply/module_mounts.hpp"
#include "plan/seccomp_rules.hpp"
#include "supervise/denial_table.hpp"
#include "sys/descriptor_passing.hpp"

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

// Sends `fd` with `text` on `socket`, as the launcher sends its listener (SCM_RIGHTS).
void send_with_fd(int socket, const char* text, int fd) {
  ASSERT_EQ(send_with_descriptor(socket, text, fd), 0);
}

// The status channel keeps a seccomp listener and nothing else sent the same way (issue 11:
// told by the listener's own ioctl, not by /proc's name of it): an eventfd (another anonymous
// inode), a pipe and a socket are dropped; a listener made by a child is kept, whichever order.
TEST(StatusChannel, KeepsASeccompListenerAndDropsAnyOtherDescriptor) {
  int channel[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel), 0);
  UniqueFd reader(channel[0]), writer(channel[1]);
  char buffer[64];
  {
    UniqueFd event(::eventfd(0, EFD_CLOEXEC));
    Pipe pipe;
    UniqueFd a(pipe.fds[0]), b(pipe.fds[1]);
    for (int fd : {event.get(), a.get(), writer.get()}) {
      send_with_fd(writer.get(), "x", fd);
      StatusChannelDescriptors kept;
      ASSERT_EQ(read_status_channel(reader.get(), buffer, sizeof buffer, kept), 1);
      EXPECT_FALSE(kept.listener.valid()) << fd;
      EXPECT_FALSE(kept.module_mounts.valid()) << fd;
    }
  }
  // A child installs an allow-all filter with a listener (its own process: the test's stays
  // unfiltered) and sends it, as the launcher does before its exec.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    sock_fprog program{1, allow};
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    const long fd =
        ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &program);
    if (fd < 0) ::_exit(2);
    send_with_fd(writer.get(), "listener\n", static_cast<int>(fd));
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  StatusChannelDescriptors kept;
  ASSERT_EQ(read_status_channel(reader.get(), buffer, sizeof buffer, kept), 9);
  UniqueFd& listener = kept.listener;
  EXPECT_TRUE(listener.valid());
  char name[64] = {};
  ASSERT_GT(::readlink(("/proc/self/fd/" + std::to_string(listener.get())).c_str(), name,
                       sizeof name - 1),
            0);
  EXPECT_STREQ(name, "anon_inode:seccomp notify");
}

// sandbox-run's child sends its mount namespace the same way when the run gives its namespaces
// back to the node's stock (namespace_stock.hpp): a mount namespace is kept, another kind of
// namespace is dropped.
TEST(StatusChannel, KeepsAMountNamespaceAndDropsAnotherKindOfNamespace) {
  int channel[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel), 0);
  UniqueFd reader(channel[0]), writer(channel[1]);
  char buffer[64];
  for (const char* other : {"/proc/self/ns/net", "/proc/self/ns/ipc", "/proc/self/ns/uts"}) {
    UniqueFd ns(::open(other, O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(ns.valid()) << other;
    send_with_fd(writer.get(), "mounts\n", ns.get());
    StatusChannelDescriptors kept;
    ASSERT_EQ(read_status_channel(reader.get(), buffer, sizeof buffer, kept), 7);
    EXPECT_FALSE(kept.module_mounts.valid()) << other;
    EXPECT_FALSE(kept.listener.valid()) << other;
  }
  UniqueFd mounts(::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(mounts.valid());
  send_with_fd(writer.get(), "mounts\n", mounts.get());
  StatusChannelDescriptors kept;
  ASSERT_EQ(read_status_channel(reader.get(), buffer, sizeof buffer, kept), 7);
  ASSERT_TRUE(kept.module_mounts.valid());
  struct stat sent {
  }, received{};
  ASSERT_EQ(::fstat(mounts.get(), &sent), 0);
  ASSERT_EQ(::fstat(kept.module_mounts.get(), &received), 0);
  EXPECT_EQ(sent.st_ino, received.st_ino);
  EXPECT_FALSE(kept.listener.valid());
}

// What the run's child sends: the mount namespace it is in, by either way (the pidfd's from
// Linux 6.11; /proc's, the only one on 6.2 to 6.10, which no kernel of the test matrix takes
// by itself). In a child with a mount namespace of its own (root), both name that one.
TEST(StatusChannel, TheChildsOwnMountNamespaceEitherWay) {
  if (::geteuid() != 0) GTEST_SKIP() << "a mount namespace of its own needs root";
  struct stat node {};
  ASSERT_EQ(::stat("/proc/self/ns/mnt", &node), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::unshare(CLONE_NEWNS) != 0) ::_exit(10);
    struct stat own {};
    if (::stat("/proc/self/ns/mnt", &own) != 0 || own.st_ino == node.st_ino) ::_exit(11);
    int code = 0;
    for (bool by_pidfd : {true, false}) {
      const UniqueFd ns = own_mount_namespace(by_pidfd);
      struct stat got {};
      if (!ns.valid() || ::fstat(ns.get(), &got) != 0) code |= by_pidfd ? 1 : 2;
      if (got.st_ino != own.st_ino || ::ioctl(ns.get(), NS_GET_NSTYPE) != CLONE_NEWNS) {
        code |= by_pidfd ? 4 : 8;
      }
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: unshare, 11: no own namespace, bits: 1/4 by pidfd, "
                                       "2/8 by /proc (none, another)";
}

}  // namespace
}  // namespace oarbank
