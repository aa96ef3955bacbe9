#include "supervise/namespace_stock.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "apply/ipc_namespace.hpp"
#include "apply/module_mounts.hpp"
#include "apply/module_network.hpp"
#include "sys/descriptor_passing.hpp"
#include "sys/error.hpp"
#include "sys/trusted_input.hpp"

namespace oarbank {
namespace {

constexpr char kSetMessage[] = "set";
// While runs take sets, the stock looks at its queues and givers every kBusyTick instead of
// sleeping on them, so that neither a run's notices nor its exit wake it: waking a process that
// sleeps on another CPU cost its waker about 20 us here (the reschedule IPI traps to the
// hypervisor), and a run would pay three (its "took", its "back", and its exit, which its pidfd
// signals). After kQuietAfter without a notice it sleeps on its queues and on the pidfds of the
// runs whose sets it still holds (a run that never exits, or a set it cannot make, must not keep
// it ticking): the first run after a quiet spell wakes it.
constexpr std::chrono::milliseconds kBusyTick{10};
constexpr std::chrono::seconds kQuietAfter{1};
// Given-back sets held at most, each until its run has exited; a set given back beyond them is
// closed at once (that run's exit then pays the teardown). Fewer where the open-file limit
// (raised to its hard limit at start) has no room for them: a held set is up to six
// descriptors and its giver's pidfd, counted as eight, beside a reserve for the stock's own
// (its queues, the sets it is making).
constexpr std::size_t kMostHeld = 1024;
constexpr std::size_t kFilesPerHeldSet = 8;
constexpr std::size_t kFilesReserved = 64;

std::size_t most_held_sets() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur == RLIM_INFINITY) return kMostHeld;
  const auto limit = static_cast<std::size_t>(files.rlim_cur);
  if (limit <= kFilesReserved) return 0;
  return std::min(kMostHeld, (limit - kFilesReserved) / kFilesPerHeldSet);
}
// After a set could not be made, the next try.
constexpr std::chrono::seconds kRetryAfter{1};
constexpr std::size_t kSetDescriptors = 4;  // net, ipc, mqueue, devpts, in that order
// The mqueue file system's magic (ipc/mqueue.c; not in Debian 12's <linux/magic.h>).
constexpr long kMqueueMagic = 0x19800202;

// The namespace `fd` is of `type` (NS_GET_NSTYPE, Linux 4.11).
std::string namespace_problem(int fd, int type, const char* name) {
  if (::ioctl(fd, NS_GET_NSTYPE) != type) {
    return std::string("its ") + name + " descriptor is not a " + name + " namespace";
  }
  return "";
}

// The namespace `fd` is not the one this process is in (the node's: a module must never be
// handed it).
bool is_own_namespace(int fd, const char* own_path) {
  struct stat made {};
  struct stat own {};
  return ::fstat(fd, &made) != 0 || ::stat(own_path, &own) != 0 ||
         (made.st_dev == own.st_dev && made.st_ino == own.st_ino);
}

std::string filesystem_problem(int fd, long magic, const char* name) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0 || fs.f_type != magic) {
    return std::string("its ") + name + " descriptor is not a " + name + " mount";
  }
  return "";
}

std::string inode_text(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? std::to_string(st.st_ino) : "?";
}

// A notice to the stock, on the queue's own socket (a socket pair carries messages both ways:
// the stock reads what takers send on their end). MSG_DONTWAIT: a stock whose queue is full
// is not waited for.
bool send_notice(int queue, std::string_view text, std::span<const int> fds) {
  return send_with_descriptors(queue, text, fds, nullptr, MSG_DONTWAIT) == 0;
}

// The stock's address file: "PID DOWN_FD DOWN_INODE UP_FD UP_INODE".
struct StockAddress {
  long pid = 0;
  long fd[2] = {-1, -1};
  unsigned long long inode[2] = {0, 0};
};

std::optional<StockAddress> read_stock_address(const std::string& path) {
  // O_NONBLOCK and a regular file of this process's own user that no one else may write
  // (attack review, session 16): a FIFO there blocked every root sandbox-run in open(2), with
  // its SIGTERM blocked; a file another user wrote would name the process to take from.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !own_unshared_regular_file(st)) return std::nullopt;
  char text[128] = {};
  const ssize_t n = ::read(fd.get(), text, sizeof text - 1);
  if (n <= 0) return std::nullopt;
  StockAddress address;
  if (std::sscanf(text, "%ld %ld %llu %ld %llu", &address.pid, &address.fd[0], &address.inode[0],
                  &address.fd[1], &address.inode[1]) != 5 ||
      address.pid <= 0) {
    return std::nullopt;
  }
  return address;
}

}  // namespace

std::string namespace_stock_file(const std::string& state_dir) {
  return state_dir + "/namespace-stock";
}

std::optional<NamespaceSet> take_namespace_set(const std::string& state_dir, bool loopback_up,
                                               std::string* why) {
  std::string ignored;
  std::string& problem = why != nullptr ? *why : ignored;
  problem.clear();
  const auto address = read_stock_address(namespace_stock_file(state_dir));
  if (!address) return std::nullopt;  // no stock
  const int kind = loopback_up ? 1 : 0;
  UniqueFd stock(static_cast<int>(::syscall(SYS_pidfd_open, address->pid, 0)));
  if (!stock.valid()) return std::nullopt;  // it stopped without removing its file
  UniqueFd queue(static_cast<int>(::syscall(SYS_pidfd_getfd, stock.get(), address->fd[kind], 0)));
  if (!queue.valid()) {
    problem = "pidfd_getfd: " + errno_text(errno);
    return std::nullopt;
  }
  // The very socket the stock named: a pid of a stock that died, taken by another process
  // since, would name something else at that number.
  struct stat st {};
  if (::fstat(queue.get(), &st) != 0 || !S_ISSOCK(st.st_mode) ||
      st.st_ino != address->inode[kind]) {
    problem = "its file names a socket that is not there";
    return std::nullopt;
  }
  // Made by that very process, and a process of root's (SO_PEERCRED of a socket pair: its
  // maker's, fixed when it was made): a pid the kernel gave to another user's process after
  // the stock died, holding a socket at that number whose inode (sockfs numbers them with a
  // 32-bit counter) it ran around to, must not hand this run namespaces and mounts of its
  // choosing. (A process of root's is trusted to be the stock, as the file in root's own
  // directory says; the stock checks what it makes: make_namespace_set.)
  ucred maker{};
  socklen_t maker_size = sizeof maker;
  if (::getsockopt(queue.get(), SOL_SOCKET, SO_PEERCRED, &maker, &maker_size) != 0 ||
      maker.uid != 0 || maker.pid != address->pid) {
    problem = "its socket was not made by a process of root's it names";
    return std::nullopt;
  }
  char message[16] = {};
  std::vector<UniqueFd> fds;
  const ssize_t n =
      receive_with_descriptors(queue.get(), message, sizeof message - 1, fds, MSG_DONTWAIT);
  if (n < 0) {
    if (errno != EAGAIN) problem = "recvmsg: " + errno_text(errno);
    return std::nullopt;  // EAGAIN: none ready for now
  }
  if (std::string_view(message, static_cast<std::size_t>(n)) != kSetMessage ||
      fds.size() != kSetDescriptors) {
    problem = "what it queued is not a set of " + std::to_string(kSetDescriptors) + " descriptors";
    return std::nullopt;
  }
  NamespaceSet set{std::move(fds[0]), std::move(fds[1]), std::move(fds[2]),
                   std::move(fds[3]), std::move(queue),  UniqueFd()};
  for (const std::string& found :
       {namespace_problem(set.net.get(), CLONE_NEWNET, "network"),
        namespace_problem(set.ipc.get(), CLONE_NEWIPC, "IPC"),
        filesystem_problem(set.mqueue.get(), kMqueueMagic, "mqueue"),
        filesystem_problem(set.devpts.get(), DEVPTS_SUPER_MAGIC, "devpts")}) {
    if (!found.empty()) {
      problem = found;
      return std::nullopt;
    }
  }
  // So that it makes another (and, with --verbose, says which one was taken).
  send_notice(
      set.notice.get(),
      std::string(loopback_up ? "took u net:[" : "took d net:[") + inode_text(set.net.get()) + "]",
      {});
  return set;
}

void give_back_namespace_set(NamespaceSet set) {
  int fds[kSetDescriptors + 2];
  std::size_t count = 0;
  for (const UniqueFd* fd : {&set.net, &set.ipc, &set.mqueue, &set.devpts, &set.mounts}) {
    if (fd->valid()) fds[count++] = fd->get();
  }
  if (count == 0 || !set.notice.valid()) return;
  // Last, this process's own pidfd (Linux 5.3): the stock watches it for this process's exit.
  // The pid of the notice's credentials would do until this process is reaped, and then name
  // whichever process the kernel gives it next, holding the set while that one lives.
  const UniqueFd self(static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0)));
  if (self.valid()) fds[count++] = self.get();
  // In the socket's queue the descriptors stay open until the stock takes them; it closes
  // them once this process has exited (the copies here close first, below, or with it).
  send_notice(set.notice.get(), "back", std::span<const int>(fds, count));
}

NamespaceSet make_namespace_set(bool loopback_up) {
  NamespaceSet set;
  set.net = make_loopback_network(loopback_up).netns;
  IpcNamespace ipc = make_ipc_namespace();
  set.ipc = std::move(ipc.ns);
  set.mqueue = std::move(ipc.mqueue);
  set.devpts = make_devpts_instance();
  // What was made is new: never the namespaces this process is in, the node's.
  if (is_own_namespace(set.net.get(), "/proc/thread-self/ns/net") ||
      is_own_namespace(set.ipc.get(), "/proc/thread-self/ns/ipc")) {
    throw Error(ErrorKind::StepFailed, "a namespace made for the stock is the node's own");
  }
  return set;
}

namespace {

// The run state directory, locked (an exclusive flock of the directory itself, which nothing
// else locks) for as long as this stock serves it: one stock a directory, even two started at
// the same instant, and nothing to leave behind. Invalid when another stock holds it.
UniqueFd lock_state_dir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) throw Error(ErrorKind::StepFailed, "open " + dir + ": " + errno_text(errno));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return UniqueFd();
    throw Error(ErrorKind::StepFailed, "flock " + dir + ": " + errno_text(errno));
  }
  return fd;
}

// The address file, whole or not at all (written aside, then renamed).
void write_stock_address(const std::string& path, const StockAddress& address) {
  const std::string aside = path + ".new";
  UniqueFd fd(::open(aside.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) throw Error(ErrorKind::StepFailed, "open " + aside + ": " + errno_text(errno));
  const std::string text = std::to_string(address.pid) + " " + std::to_string(address.fd[0]) + " " +
                           std::to_string(address.inode[0]) + " " + std::to_string(address.fd[1]) +
                           " " + std::to_string(address.inode[1]) + "\n";
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::rename(aside.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(aside.c_str());
    throw Error(ErrorKind::StepFailed, "write " + path + ": " + errno_text(err));
  }
}

// The stock's file, removed however serving ends (a throw from its loop included), while the
// directory's lock is still held (declared after it): no other stock can have written the file
// meanwhile.
class NamedAddress {
 public:
  explicit NamedAddress(std::string path) : path_(std::move(path)) {}
  NamedAddress(const NamedAddress&) = delete;
  NamedAddress& operator=(const NamedAddress&) = delete;
  ~NamedAddress() { remove(); }
  void remove() {
    if (!path_.empty()) ::unlink(path_.c_str());
    path_.clear();
  }

 private:
  std::string path_;
};

class Stock {
 public:
  explicit Stock(const StockOptions& options) : options_(options) {
    for (int kind = 0; kind < 2; ++kind) {
      int pair[2];
      if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
        throw Error(ErrorKind::StepFailed, "socketpair: " + errno_text(errno));
      }
      queue_[kind].reset(pair[0]);
      queued_end_[kind].reset(pair[1]);
      // What takers send back on their end carries their credentials, checked below: root's
      // only (nobody else can take the end: pidfd_getfd of a root process).
      const int one = 1;
      ::setsockopt(pair[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
    }
  }

  // The stock's end of each kind's pair, where the takers' notices arrive.
  int notices(int kind) const { return queue_[kind].get(); }

  StockAddress address() const {
    StockAddress address;
    address.pid = ::getpid();
    for (int kind = 0; kind < 2; ++kind) {
      struct stat st {};
      ::fstat(queued_end_[kind].get(), &st);
      address.fd[kind] = queued_end_[kind].get();
      address.inode[kind] = st.st_ino;
    }
    return address;
  }

  // The kind whose queue is short, -1 when both are full. What is queued is counted by the
  // kernel: SIOCOUTQ on the stock's end is the size of its messages not yet taken, every set
  // message the same size. So a notice lost, or a run that died between its take and its
  // notice, cannot make the stock believe it holds sets it does not.
  int short_kind() const {
    for (int kind = 0; kind < 2; ++kind) {
      if (queued(kind) < options_.sets_per_kind) return kind;
    }
    return -1;
  }

  std::size_t queued(int kind) const {
    int bytes = 0;
    if (message_size_[kind] == 0 || ::ioctl(queue_[kind].get(), SIOCOUTQ, &bytes) != 0) return 0;
    return static_cast<std::size_t>(bytes) / message_size_[kind];
  }

  // One set made and queued. False (said) when it cannot be made.
  bool make_one(int kind) {
    try {
      NamespaceSet set = make_namespace_set(kind == 1);
      const int fds[kSetDescriptors] = {set.net.get(), set.ipc.get(), set.mqueue.get(),
                                        set.devpts.get()};
      const int err = send_with_descriptors(
          queue_[kind].get(), std::string_view(kSetMessage, sizeof kSetMessage - 1), fds);
      if (err != 0) {
        options_.say("cannot queue a set: " + errno_text(err));
        return false;
      }
      if (message_size_[kind] == 0) {
        int bytes = 0;  // the first set, in an empty queue: the size of one message
        if (::ioctl(queue_[kind].get(), SIOCOUTQ, &bytes) == 0 && bytes > 0) {
          message_size_[kind] = static_cast<std::size_t>(bytes);
        }
      }
      if (options_.verbose) {
        options_.say(std::string("made ") + (kind == 1 ? "u" : "d") + " net:[" +
                     inode_text(set.net.get()) + "] ipc:[" + inode_text(set.ipc.get()) + "]");
      }
      return true;  // the queued message holds the descriptors now; these copies close here
    } catch (const Error& e) {
      options_.say(std::string("cannot make a set (runs make their own meanwhile): ") + e.what());
      return false;
    }
  }

  // Every notice waiting on `notice`: a set taken, or one given back (closed once its giver
  // has exited, its releases with it). A notice that is not root's is dropped, whatever it
  // carries. Returns how many were read.
  std::size_t read_notices(int notice) {
    for (std::size_t read = 0;; ++read) {
      char text[64] = {};
      std::vector<UniqueFd> given;  // closed at the end of this turn, their releases with them
      ucred sender{};
      const ssize_t n =
          receive_with_descriptors(notice, text, sizeof text - 1, given, MSG_DONTWAIT, &sender);
      if (n < 0) return read;
      if (sender.uid != 0) continue;
      const std::string_view what(text, static_cast<std::size_t>(n));
      if (what.starts_with("took ") && what.size() > 5) {
        if (options_.verbose) {
          options_.say("taken " + std::string(what.substr(5)) + " by pid " +
                       std::to_string(sender.pid));
        }
      } else if (what == "back" && !given.empty()) {
        // Closed once the giver has exited: closed now, the stock could be the first to let
        // go, and the giver's own close the last, with the waits it was meant to be spared.
        UniqueFd giver = giver_pidfd(given, sender.pid);
        const bool held = giver.valid() && given_back_.size() < most_held_;
        if (options_.verbose) {
          options_.say("given back by pid " + std::to_string(sender.pid) + ": " +
                       std::to_string(given.size()) + " descriptors" + namespaces_named(given) +
                       (held ? ""
                             : ", closed at once (" + std::to_string(given_back_.size()) +
                                   " sets held, at most " + std::to_string(most_held_) + ")"));
        }
        if (held) given_back_.push_back(GivenBack{std::move(giver), std::move(given)});
      }
    }
  }

  // The namespaces among `given`, as /proc names them (" (ipc:[...] mnt:[...])"), for --verbose.
  static std::string namespaces_named(const std::vector<UniqueFd>& given) {
    std::string names;
    for (const UniqueFd& fd : given) {
      const char* kind = nullptr;
      switch (::ioctl(fd.get(), NS_GET_NSTYPE)) {
        case CLONE_NEWNET:
          kind = "net";
          break;
        case CLONE_NEWIPC:
          kind = "ipc";
          break;
        case CLONE_NEWNS:
          kind = "mnt";
          break;
        default:
          continue;
      }
      names += (names.empty() ? " (" : " ") + std::string(kind) + ":[" + inode_text(fd.get()) + "]";
    }
    return names.empty() ? names : names + ")";
  }

  // The giver's pidfd: the last descriptor it sent, where that is one (pidfd_send_signal's
  // signal 0: ESRCH once it has exited, EBADF for any other file), else one opened from the
  // pid of its credentials.
  static UniqueFd giver_pidfd(std::vector<UniqueFd>& given, pid_t pid) {
    if (given.size() > 1) {
      const long alive = ::syscall(SYS_pidfd_send_signal, given.back().get(), 0, nullptr, 0);
      if (alive == 0 || errno == ESRCH) {
        UniqueFd giver = std::move(given.back());
        given.pop_back();
        return giver;
      }
    }
    return UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  }

  // What the givers that exited gave back (their pidfds readable, asked without waiting) is
  // closed now, its releases here.
  void close_exited() {
    if (given_back_.empty()) return;
    std::vector<pollfd> givers;
    for (const auto& back : given_back_) givers.push_back({back.giver.get(), POLLIN, 0});
    if (::poll(givers.data(), givers.size(), 0) <= 0) return;
    for (std::size_t i = givers.size(); i-- > 0;) {
      if (givers[i].revents != 0) {
        given_back_.erase(given_back_.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
  }
  // The pidfds of the runs whose sets are held: a quiet stock sleeps on them too.
  void watch_givers(std::vector<pollfd>& watched) const {
    for (const auto& back : given_back_) watched.push_back({back.giver.get(), POLLIN, 0});
  }

 private:
  // What a run gave back, until its process is gone (its pidfd readable).
  struct GivenBack {
    UniqueFd giver;
    std::vector<UniqueFd> fds;
  };
  std::vector<GivenBack> given_back_;
  const std::size_t most_held_ = most_held_sets();  // after serve_namespace_stock's setrlimit
  const StockOptions& options_;
  UniqueFd queue_[2];       // the stock's end of each kind's pair: [0] loopback down, [1] up
  UniqueFd queued_end_[2];  // the end takers read (pidfd_getfd), never read here
  std::size_t message_size_[2] = {0, 0};  // of one set's message in the queue (SIOCOUTQ)
};

}  // namespace

int serve_namespace_stock(const StockOptions& options) {
  sigset_t stops;
  sigemptyset(&stops);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stops, sig);
  UniqueFd signals(::signalfd(-1, &stops, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals.valid()) throw Error(ErrorKind::StepFailed, "signalfd: " + errno_text(errno));
  const std::string file_path = namespace_stock_file(options.state_dir);
  const UniqueFd lock = lock_state_dir(options.state_dir);
  if (!lock.valid()) {
    throw Error(ErrorKind::Busy, "another namespace stock serves " + options.state_dir +
                                     " (it holds the directory's lock)");
  }
  // Each held set is descriptors (most_held_sets); the soft limit up to the hard one.
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  Stock stock(options);
  // Full before it is named: the first runs find sets.
  for (int kind = stock.short_kind(); kind >= 0; kind = stock.short_kind()) {
    if (!stock.make_one(kind)) break;
  }
  write_stock_address(file_path, stock.address());
  NamedAddress named(file_path);
  options.say("serving " + options.state_dir + " (" + std::to_string(options.sets_per_kind) +
              " sets of each kind queued)");
  if (options.ready) options.ready();
  using Clock = std::chrono::steady_clock;
  bool busy = false;  // looking every kBusyTick, not sleeping on the queues
  Clock::time_point last_notice;
  Clock::time_point next_try;  // after a set could not be made: not before then
  for (;;) {
    std::vector<pollfd> watched{{signals.get(), POLLIN, 0}};
    if (!busy) {
      watched.push_back({stock.notices(0), POLLIN, 0});
      watched.push_back({stock.notices(1), POLLIN, 0});
      stock.watch_givers(watched);
    }
    // Short: the next set at once (after a failure, at next_try). Full: the next tick when
    // busy; else a notice or a giver's exit wakes it, a second at most (the queues are
    // recounted).
    const bool making = stock.short_kind() >= 0 && Clock::now() >= next_try;
    const int timeout = making ? 0 : busy ? static_cast<int>(kBusyTick.count()) : 1000;
    if (::poll(watched.data(), watched.size(), timeout) < 0 && errno != EINTR) {
      throw Error(ErrorKind::StepFailed, "poll: " + errno_text(errno));
    }
    if (watched[0].revents != 0) break;
    const Clock::time_point now = Clock::now();
    if (stock.read_notices(stock.notices(0)) + stock.read_notices(stock.notices(1)) > 0) {
      busy = true;
      last_notice = now;
    }
    stock.close_exited();
    const int short_now = stock.short_kind();
    if (short_now >= 0 && now >= next_try && !stock.make_one(short_now)) {
      next_try = now + kRetryAfter;
    }
    if (busy && now - last_notice >= kQuietAfter) busy = false;
  }
  named.remove();
  options.say("stopped");
  return 0;
}

}  // namespace oarbank
