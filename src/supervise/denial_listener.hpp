// sandbox-run's seccomp listener (docs/denials.md): the launcher loads the notifying variant of
// the module's filter with SECCOMP_FILTER_FLAG_NEW_LISTENER and sends the listener over the
// status channel (apply/seccomp_apply.cpp); here the supervisor receives it, and a thread of its
// own answers every refused call at once with the errno sandbox-exec's filter gives it, and
// records it. If this process dies, the kernel answers every pending and later call ENOSYS:
// still a refusal.
#pragma once

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include "plan/seccomp_rules.hpp"
#include "supervise/denial_table.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {

// Whether this kernel hands filter refusals to a listener (SECCOMP_RET_USER_NOTIF, Linux 5.0;
// SECCOMP_GET_ACTION_AVAIL).
bool seccomp_user_notification_available();

// What the launcher may send with its bytes on the status channel (SCM_RIGHTS).
struct StatusChannelDescriptors {
  UniqueFd listener;  // the module's seccomp listener (apply/seccomp_apply.cpp)
  // The module's mount namespace, which sandbox-run's child sends when the run gives its
  // namespaces back to the node's stock (namespace_stock.hpp): held here, the module's exit is
  // not its last reference, so that exit does not wait for the namespace's teardown.
  UniqueFd module_mounts;
  // The module's own /tmp (a tmpfs directory), which sandbox-run's child sends once its mounts
  // are made: held, it outlives the module's mount namespace, so that after a failing exit the
  // supervisor can look there for a program the module wrote (session 21's real-programs
  // review: make's /tmp/gen.sh on the noexec tmpfs got no line) and at how full it is.
  UniqueFd own_tmp;
};

// read(2) on the status channel (a unix stream socket), keeping what the launcher sent with the
// bytes: the first seccomp listener, mount namespace and tmpfs directory received go to
// `kept`; any other descriptor is closed.
ssize_t read_status_channel(int fd, char* buffer, std::size_t size, StatusChannelDescriptors& kept);

// How fast the listener answers (attack review): each refused call costs the supervisor, outside
// the module's cgroup and so outside its cpu.max, about ten times what it costs the module
// (/proc reads, the errno program, the table: 100,000 refusals took the module 0.4 s of CPU and
// the supervisor 4 s, measured). At most kCalls calls are answered per kWindow; the next ones
// wait in the kernel for the next window, refused all the same, so a module refused in a loop
// is slowed down instead of the supervisor made busy (about 2,000 refusals a second; 10,000
// refusals naming 4 KB paths then took 5 s and the supervisor 0.6 s of CPU, about a tenth of one
// CPU at most). Pure: the caller gives the time.
class RefusalPace {
 public:
  static constexpr std::chrono::milliseconds kWindow{100};
  static constexpr std::uint32_t kCalls = 200;
  // Counts one call answered at `now`; returns how long to wait before answering the next.
  [[nodiscard]] std::chrono::nanoseconds answered(std::chrono::steady_clock::time_point now) {
    if (now - window_start_ >= kWindow) {
      window_start_ = now;
      calls_ = 0;
    }
    if (++calls_ < kCalls) return std::chrono::nanoseconds(0);
    return window_start_ + kWindow - now;
  }

 private:
  std::chrono::steady_clock::time_point window_start_{};
  std::uint32_t calls_ = 0;
};

class SeccompListener {
 public:
  SeccompListener(const seccomp::FilterVariant& variant, DenialTable& table)
      : variant_(variant), table_(table) {}
  ~SeccompListener() { stop(); }
  SeccompListener(const SeccompListener&) = delete;
  SeccompListener& operator=(const SeccompListener&) = delete;

  // Takes `listener` to answer on. Its thread starts with the first refused call, not here: a
  // module that makes none (most runs) costs no thread. Until then the supervisor polls
  // waiting_fd() and calls on_ready() when it is readable; a refused call waits for its answer
  // in the kernel meanwhile (it is never let through). False when no listener was given.
  bool start(UniqueFd listener) noexcept;
  // The module's own uid and gid (+own-user), before the first call is answered:
  // inotify_add_watch is then added here for what that uid owns (inotify_watch.hpp). -1 (the
  // default): refused.
  // The leaf's descriptor is copied: the teardown closes the leaf's own before this stops.
  void set_module_user(std::int64_t uid, std::int64_t gid, int leaf) noexcept {
    module_uid_ = uid;
    module_gid_ = gid;
    module_leaf_.reset(leaf >= 0 ? ::fcntl(leaf, F_DUPFD_CLOEXEC, 3) : -1);
  }
  // The listener while no thread answers it yet (for the supervisor's poll), else -1.
  [[nodiscard]] int waiting_fd() const {
    return thread_.joinable() || !watching_ ? -1 : listener_.get();
  }
  // waiting_fd() polled `revents`: a refused call waits (POLLIN): the thread starts and answers
  // it and every later one. POLLHUP alone: no process uses the filter any more. Where no thread
  // can start, the listener is closed and the kernel answers every refused call ENOSYS (still
  // refused, not recorded).
  void on_ready(short revents) noexcept;
  // Before the module's last processes are killed: a refused call that waits now is answered
  // and recorded (its thread starts), as it would have been had the thread run all along.
  void serve_waiting() noexcept;
  // Stops answering (after the module's processes are gone) and waits for the thread.
  void stop();
  // Whether it answered this run's refusals (a listener was taken and its thread, when one
  // was needed, started).
  [[nodiscard]] bool served() const { return served_; }

 private:
  void answer_watch(const seccomp_notif& request);
  void serve();
  std::int64_t module_uid_ = -1;
  std::int64_t module_gid_ = -1;
  UniqueFd module_leaf_;  // the module's cgroup leaf: where a watch's path is resolved
  // The inotify marks the supervisor adds are charged to its own memory cgroup, not the
  // module's leaf: at most this many per run (then ENOSPC, as the kernel's own limit answers).
  static constexpr std::uint32_t kMaxWatches = 8192;
  std::uint32_t watches_ = 0;
  // And at most this many tries a run, added or not: each is a child process the supervisor
  // waits for (in the module's leaf, where there is one).
  static constexpr std::uint32_t kMaxWatchTries = 65536;
  std::uint32_t watch_tries_ = 0;
  bool watching_ = false;  // listener_ is polled by the supervisor (no thread yet)

  seccomp::FilterVariant variant_;
  DenialTable& table_;
  UniqueFd listener_;
  UniqueFd stop_event_;
  std::thread thread_;
  bool served_ = false;
};

}  // namespace oarbank
