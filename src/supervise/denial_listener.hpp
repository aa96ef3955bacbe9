// sandbox-run's seccomp listener (docs/denials.md): the launcher loads the notifying variant of
// the module's filter with SECCOMP_FILTER_FLAG_NEW_LISTENER and sends the listener over the
// status channel (apply/seccomp_apply.cpp); here the supervisor receives it, and a thread of its
// own answers every refused call at once with the errno sandbox-exec's filter gives it, and
// records it. If this process dies, the kernel answers every pending and later call ENOSYS:
// still a refusal.
#pragma once

#include <sys/types.h>

#include <thread>

#include "plan/seccomp_rules.hpp"
#include "supervise/denial_table.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {

// Whether this kernel hands filter refusals to a listener (SECCOMP_RET_USER_NOTIF, Linux 5.0;
// SECCOMP_GET_ACTION_AVAIL).
bool seccomp_user_notification_available();

// read(2) on the status channel (a unix stream socket), keeping a seccomp listener sent with
// the bytes (SCM_RIGHTS): the first one received goes to `listener`, any other descriptor, or
// one that is not a seccomp listener, is closed.
ssize_t read_status_channel(int fd, char* buffer, std::size_t size, UniqueFd& listener);

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
  void serve();
  bool watching_ = false;  // listener_ is polled by the supervisor (no thread yet)

  seccomp::FilterVariant variant_;
  DenialTable& table_;
  UniqueFd listener_;
  UniqueFd stop_event_;
  std::thread thread_;
  bool served_ = false;
};

}  // namespace oarbank
