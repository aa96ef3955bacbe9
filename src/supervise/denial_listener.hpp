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

  // Starts answering on `listener`. False when no thread could start: the listener is closed,
  // and the kernel answers every refused call ENOSYS (still refused, not recorded).
  bool start(UniqueFd listener) noexcept;
  // Stops answering (after the module's processes are gone) and waits for the thread.
  void stop();
  // Whether it answered this run's refusals (start() succeeded).
  [[nodiscard]] bool served() const { return served_; }

 private:
  void serve();

  seccomp::FilterVariant variant_;
  DenialTable& table_;
  UniqueFd listener_;
  UniqueFd stop_event_;
  std::thread thread_;
  bool served_ = false;
};

}  // namespace oarbank
