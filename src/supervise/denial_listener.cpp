#include "supervise/denial_listener.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "apply/seccomp_programs.hpp"
#include "plan/denial_advice.hpp"
#include "plan/seccomp_eval.hpp"
#include "probe/audit_state.hpp"
#include "supervise/inotify_watch.hpp"
#include "sys/descriptor_passing.hpp"

namespace oarbank {
namespace {

// The rules' syscalls by number (generated with the programs, tools/filtergen.cpp).
std::string syscall_name(int nr) {
  for (std::size_t i = 0; i < seccomp::kRuleSyscallCount; ++i) {
    if (seccomp::kRuleSyscalls[i].number == nr) return seccomp::kRuleSyscalls[i].name;
  }
  return "syscall " + std::to_string(nr);
}

std::string link_target(const std::string& path) {
  char buffer[4096];
  const ssize_t n = ::readlink(path.c_str(), buffer, sizeof buffer);
  return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
}

// Whether a received descriptor is a seccomp listener. Its own ioctl asks it first: "is
// notification 0 still waiting" answers 0 or ENOENT on a listener alone (the '!' ioctl
// range is seccomp's; other files answer ENOTTY or EINVAL), without the readlink of
// /proc/self/fd/N, about 15 us here (/proc makes this process's fd directory for it). Before
// Linux 5.17 the kernel knows the ioctl by another number (EINVAL): /proc's name of it then.
bool is_seccomp_listener(int fd) {
  std::uint64_t id = 0;
  if (::ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0 || errno == ENOENT) return true;
  if (errno != EINVAL) return false;
  return link_target("/proc/self/fd/" + std::to_string(fd)) == "anon_inode:seccomp notify";
}

// A NUL-terminated string of the module's memory, up to 4096 bytes, through /proc/PID/mem (the
// supervisor is the module's ancestor, and root or its very user: ptrace access). Read while
// the call waits for its answer; another thread of the module could change it meanwhile, so
// it is a record for the author, never a decision.
// `mem`: /proc/PID/mem, opened before SECCOMP_IOCTL_NOTIF_ID_VALID said the call still waits
// (the descriptor holds the memory of the process it was opened on: so it is the caller's).
std::string read_module_string(int mem, std::uint64_t address) {
  if (address == 0 || mem < 0) return "";
  char buffer[4096];
  const ssize_t n = ::pread(mem, buffer, sizeof buffer, static_cast<off_t>(address));
  if (n <= 0) return "";
  const std::size_t length = ::strnlen(buffer, static_cast<std::size_t>(n));
  return std::string(buffer, length);
}

}  // namespace

bool seccomp_user_notification_available() { return seccomp_user_notif_available(); }

ssize_t read_status_channel(int fd, char* buffer, std::size_t size,
                            StatusChannelDescriptors& kept) {
  std::vector<UniqueFd> received;
  const ssize_t n = receive_with_descriptors(fd, buffer, size, received);
  // Only the launcher writes here before the exec; still, keep nothing but a listener and a
  // mount namespace (the others close with `received`).
  for (UniqueFd& owned : received) {
    if (!kept.listener.valid() && is_seccomp_listener(owned.get())) {
      kept.listener = std::move(owned);
    } else if (!kept.module_mounts.valid() && ::ioctl(owned.get(), NS_GET_NSTYPE) == CLONE_NEWNS) {
      kept.module_mounts = std::move(owned);
    } else if (struct statfs fs{}; !kept.own_tmp.valid() && ::fstatfs(owned.get(), &fs) == 0 &&
                                   fs.f_type == TMPFS_MAGIC) {
      kept.own_tmp = std::move(owned);
    }
  }
  return n;
}

// +own-user: the module's inotify_add_watch, added here or refused (inotify_watch.hpp); only
// a refusal for ownership (EACCES) is a denial: the other errors are the module's own (no
// such file, a descriptor that is no instance), as the kernel would have answered them.
void SeccompListener::answer_watch(const seccomp_notif& request) {
  const auto tid = static_cast<pid_t>(request.pid);
  WatchAnswer answer;
  if (watches_ >= kMaxWatches || watch_tries_ >= kMaxWatchTries) {
    answer.error = ENOSPC;
  } else {
    ++watch_tries_;
    answer = add_watch_for_module(tid, request.data,
                                  ModuleUser{module_uid_, module_gid_, module_leaf_.get()},
                                  listener_.get(), request.id);
  }
  if (answer.error == 0) ++watches_;
  if (answer.error == ESRCH) return;  // the caller is gone: nothing to answer
  seccomp_notif_resp response;
  std::memset(&response, 0, sizeof response);
  response.id = request.id;
  response.error = -answer.error;
  response.val = answer.error == 0 ? answer.value : 0;
  response.flags = 0;  // never SECCOMP_USER_NOTIF_FLAG_CONTINUE
  ::ioctl(listener_.get(), SECCOMP_IOCTL_NOTIF_SEND, &response);
  if (answer.error != EACCES && answer.error != EPERM) return;
  Denial denial;
  denial.mechanism = "seccomp";
  denial.operation = "inotify_add_watch";
  denial.object = answer.path;
  denial.error = seccomp::errno_name(answer.error);
  denial.reason =
      answer.error == EPERM
          ? "inotify watches are the supervisor's to add, under a uid of the module's own only"
          : "an inotify watch only on what the module's own uid owns (its work, data and temp, "
            "and what it made): Landlock does not govern watches, and every uid may read /tmp "
            "or another module's input";
  denial.pid = tid;
  denial.executable = link_target("/proc/" + std::to_string(tid) + "/exe");
  table_.add(denial);
}

bool SeccompListener::start(UniqueFd listener) noexcept {
  if (!listener.valid()) return false;
  listener_ = std::move(listener);
  watching_ = true;
  served_ = true;
  return true;
}

void SeccompListener::on_ready(short revents) noexcept {
  if (!watching_ || thread_.joinable()) return;
  if ((revents & POLLIN) == 0) {
    // POLLHUP: no process uses the filter any more; nothing will wait for an answer.
    if (revents != 0) watching_ = false;
    return;
  }
  stop_event_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (stop_event_.valid()) {
    try {
      thread_ = std::thread([this] { serve(); });
      return;
    } catch (...) {  // NOLINT(bugprone-empty-catch): handled below, as no thread
    }
  }
  listener_.reset();  // the kernel answers ENOSYS from now on
  watching_ = false;
  served_ = false;
}

void SeccompListener::serve_waiting() noexcept {
  const int fd = waiting_fd();
  if (fd < 0) return;
  pollfd pfd{fd, POLLIN, 0};
  if (::poll(&pfd, 1, 0) > 0) on_ready(pfd.revents);
}

void SeccompListener::stop() {
  watching_ = false;
  if (!thread_.joinable()) {
    listener_.reset();
    return;
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(stop_event_.get(), &one, sizeof one);
  thread_.join();
  listener_.reset();
}

void SeccompListener::serve() {
  const auto& errno_program = seccomp::kPrograms[variant_.index()];
  bool listening = true;
  RefusalPace pace;
  std::chrono::nanoseconds pause(0);
  for (;;) {
    // Paced (RefusalPace): while a pause runs, only stop() is listened to.
    const bool paused = pause.count() > 0;
    pollfd fds[] = {{stop_event_.get(), POLLIN, 0},
                    {listening && !paused ? listener_.get() : -1, POLLIN, 0}};
    const int timeout_ms =
        paused ? static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(pause).count()) : -1;
    const int ready = ::poll(fds, 2, timeout_ms);
    if (paused && ready == 0) {
      pause = std::chrono::nanoseconds(0);
      continue;
    }
    if (ready < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) return;
    if ((fds[1].revents & POLLIN) == 0) {
      // POLLHUP: no process uses the filter any more; wait for stop().
      if (fds[1].revents != 0) listening = false;
      continue;
    }
    seccomp_notif request;
    std::memset(&request, 0, sizeof request);  // the kernel wants it zeroed (Linux 5.5)
    if (::ioctl(listener_.get(), SECCOMP_IOCTL_NOTIF_RECV, &request) != 0) {
      // ENOENT: the caller was killed (or its wait interrupted) before this took it.
      if (errno == ENOENT || errno == EINTR) continue;
      listening = false;
      continue;
    }
    if (request.data.nr == __NR_inotify_add_watch && variant_.own_user) {
      answer_watch(request);
      pause = pace.answered(std::chrono::steady_clock::now());
      continue;
    }
    // The errno sandbox-exec's filter answers for this very call. Anything else (which the
    // notifying program would not have handed over) is refused EPERM: never "continue".
    const std::uint32_t verdict =
        seccomp::evaluate(errno_program.instructions, errno_program.length, request.data);
    const int err = (verdict & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO
                        ? static_cast<int>(verdict & SECCOMP_RET_DATA)
                        : EPERM;
    SeccompCall call;
    call.syscall = syscall_name(request.data.nr);
    for (std::size_t i = 0; i < call.args.size(); ++i) call.args[i] = request.data.args[i];
    const int path_arg = seccomp_path_argument(call.syscall);
    const auto pid = static_cast<pid_t>(request.pid);
    // Session 21's attack review: the path was read before the check below, and kept when it
    // failed: a caller killed meanwhile, and its pid reused, would have had another process's
    // memory read into this run's record. Its memory is opened first, checked, then read.
    const UniqueFd mem(path_arg >= 0 ? ::open(("/proc/" + std::to_string(pid) + "/mem").c_str(),
                                              O_RDONLY | O_CLOEXEC)
                                     : -1);
    std::string executable = link_target("/proc/" + std::to_string(pid) + "/exe");
    // Still the same call waiting (SECCOMP_IOCTL_NOTIF_ID_VALID): the pid was not reused while
    // its files were opened.
    std::uint64_t id = request.id;
    const bool valid = ::ioctl(listener_.get(), SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
    if (valid && path_arg >= 0) {
      call.path = read_module_string(mem.get(), call.args[static_cast<std::size_t>(path_arg)]);
    }
    seccomp_notif_resp response;
    std::memset(&response, 0, sizeof response);
    response.id = request.id;
    response.error = -err;
    response.val = 0;
    response.flags = 0;  // never SECCOMP_USER_NOTIF_FLAG_CONTINUE
    // ENOENT: the caller is gone (killed); nothing to answer.
    ::ioctl(listener_.get(), SECCOMP_IOCTL_NOTIF_SEND, &response);
    Denial denial = seccomp_denial(variant_, call, err);
    if (valid) {
      denial.pid = pid;
      denial.executable = std::move(executable);
    }
    table_.add(denial);
    pause = pace.answered(std::chrono::steady_clock::now());
  }
}

}  // namespace oarbank
