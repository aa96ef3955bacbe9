#include "supervise/inotify_watch.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/fsuid.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sys/text_file.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {
namespace {

bool still_waiting(int listener, std::uint64_t id) {
  return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

// The path argument, read once from the caller's memory: NUL-terminated within PATH_MAX, as
// the kernel's getname wants it (ENAMETOOLONG otherwise; EFAULT when it cannot be read).
int read_path(pid_t tid, std::uint64_t address, std::string& path) {
  UniqueFd mem(::open(("/proc/" + std::to_string(tid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC));
  if (!mem.valid() || address == 0) return EFAULT;
  char buffer[PATH_MAX];
  const ssize_t n = ::pread(mem.get(), buffer, sizeof buffer, static_cast<off_t>(address));
  if (n <= 0) return EFAULT;
  const std::size_t length = ::strnlen(buffer, static_cast<std::size_t>(n));
  if (length == static_cast<std::size_t>(n)) return n == sizeof buffer ? ENAMETOOLONG : EFAULT;
  if (length == 0) return ENOENT;
  path.assign(buffer, length);
  return 0;
}

// The thread group of `tid` (pidfd_open wants a process; the caller may be any thread).
pid_t thread_group_of(pid_t tid) {
  const std::string status = read_text_file("/proc/" + std::to_string(tid) + "/status");
  const auto at = status.find("\nTgid:\t");
  if (at == std::string::npos) return -1;
  return static_cast<pid_t>(std::atol(status.c_str() + at + 7));
}

// This thread's file-system credentials as the module's, for a scope: setfsuid and setfsgid
// act on the calling thread alone, and so does the raw setgroups system call (glibc's wrapper
// would change every thread). Leaving fsuid 0 drops the capabilities that bypass file
// permissions from the thread's effective set; coming back to 0 restores them.
class AsModule {
 public:
  AsModule(uid_t uid, gid_t gid) {
    const int count = ::getgroups(0, nullptr);
    if (count < 0) return;
    groups_.resize(static_cast<std::size_t>(count));
    if (::getgroups(count, groups_.data()) != count) return;
    if (::syscall(SYS_setgroups, 0, nullptr) != 0) return;
    groups_dropped_ = true;
    previous_gid_ = static_cast<gid_t>(::setfsgid(gid));
    previous_uid_ = static_cast<uid_t>(::setfsuid(uid));
    // setfsuid answers the previous id whatever happened: asked again (an invalid id changes
    // nothing), each must now be the module's.
    active_ = static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))) == uid &&
              static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))) == gid;
  }
  ~AsModule() {
    if (groups_dropped_) {
      ::setfsuid(previous_uid_);
      ::setfsgid(previous_gid_);
      ::syscall(SYS_setgroups, groups_.size(), groups_.data());
    }
  }
  AsModule(const AsModule&) = delete;
  AsModule& operator=(const AsModule&) = delete;
  [[nodiscard]] bool active() const { return active_; }

 private:
  std::vector<gid_t> groups_;
  bool groups_dropped_ = false;
  bool active_ = false;
  uid_t previous_uid_ = 0;
  gid_t previous_gid_ = 0;
};

}  // namespace

WatchAnswer add_watch_for_module(pid_t tid, const seccomp_data& data, const ModuleUser& user,
                                 int listener, std::uint64_t id) {
  WatchAnswer answer;
  const std::int64_t module_uid = user.uid;
  // No uid of the module's own: no watch is the supervisor's to add.
  if (user.uid < 0 || user.gid < 0) {
    answer.error = EPERM;
    return answer;
  }
  if (int err = read_path(tid, data.args[1], answer.path)) {
    answer.error = err;
    return answer;
  }
  const auto mask = static_cast<std::uint32_t>(data.args[2]);
  // The caller's instance, root and working directory, each taken, then the caller checked to
  // be still waiting: a thread killed meanwhile could have had its number reused.
  const pid_t tgid = thread_group_of(tid);
  UniqueFd pidfd(tgid > 0 ? static_cast<int>(::syscall(SYS_pidfd_open, tgid, 0)) : -1);
  UniqueFd instance(pidfd.valid() ? static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(),
                                                               static_cast<int>(data.args[0]), 0))
                                  : -1);
  const bool absolute = answer.path.front() == '/';
  UniqueFd base(::open(("/proc/" + std::to_string(tid) + (absolute ? "/root" : "/cwd")).c_str(),
                       O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!still_waiting(listener, id)) {
    answer.error = ESRCH;  // nobody to answer
    return answer;
  }
  if (!instance.valid()) {
    answer.error = EBADF;
    return answer;
  }
  char kind[64] = {};
  const std::string self = "/proc/self/fd/" + std::to_string(instance.get());
  if (::readlink(self.c_str(), kind, sizeof kind - 1) < 0 ||
      std::strcmp(kind, "anon_inode:inotify") != 0) {
    answer.error = EINVAL;  // as the kernel answers for a descriptor that is no instance
    return answer;
  }
  if (!base.valid()) {
    answer.error = ENOENT;
    return answer;
  }
  // As the module resolves it: an absolute path from its own root (its mount namespace), with
  // absolute links kept inside that root; a relative one from its working directory. Never
  // through /proc's magic links, which would reach this process's files.
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  if ((mask & IN_DONT_FOLLOW) != 0) how.flags |= O_NOFOLLOW;
  if ((mask & IN_ONLYDIR) != 0) how.flags |= O_DIRECTORY;
  how.resolve = RESOLVE_NO_MAGICLINKS | (absolute ? RESOLVE_IN_ROOT : 0);
  UniqueFd target;
  {
    const AsModule as_module(static_cast<uid_t>(user.uid), static_cast<gid_t>(user.gid));
    if (!as_module.active()) {
      answer.error = EPERM;
      return answer;
    }
    target.reset(static_cast<int>(
        ::syscall(SYS_openat2, base.get(), answer.path.c_str(), &how, sizeof how)));
    if (!target.valid()) answer.error = errno;
  }
  if (!target.valid()) return answer;
  // Only what the module's own uid owns: no other module or user has that uid (the
  // registry's lease), so nothing watched there is anyone else's activity.
  struct stat st {};
  if (::fstat(target.get(), &st) != 0) {
    answer.error = errno;
    return answer;
  }
  if (static_cast<std::int64_t>(st.st_uid) != module_uid) {
    answer.error = EACCES;
    return answer;
  }
  // Through this process's descriptor of the very inode checked; IN_DONT_FOLLOW was applied
  // above, and would here stop at /proc's link instead.
  const std::string resolved = "/proc/self/fd/" + std::to_string(target.get());
  const int wd = ::inotify_add_watch(instance.get(), resolved.c_str(), mask & ~IN_DONT_FOLLOW);
  if (wd < 0) {
    answer.error = errno;
    return answer;
  }
  answer.value = wd;
  return answer;
}

}  // namespace oarbank
