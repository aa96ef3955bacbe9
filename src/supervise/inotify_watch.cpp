#include "supervise/inotify_watch.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <sched.h>
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
#include <system_error>
#include <thread>

#include "sys/text_file.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {
namespace {

// pidfd_open's flag for a thread's own pidfd (Linux 6.9; O_EXCL's value): an older kernel
// answers EINVAL, and the process's pidfd serves.
constexpr unsigned kPidfdThread = O_EXCL;

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

// The path resolved as the module resolves it, by a thread of its own that then ends: its
// file-system context unshared (unshare(CLONE_FS): root and working directory its own), chrooted
// to the module's root and in the module's working directory, with the module's uid and gid as
// its file-system credentials, no supplementary groups and no effective capabilities (capset
// and setfsuid act on the calling thread alone; so does the raw setgroups system call, which
// glibc's wrapper would make every thread's). So an absolute link resolves inside the module's
// root and ".." stops there, a path the module may not search answers EACCES whether or not
// something is there, and /proc's hidepid hides from it what it hides from the module
// (CAP_SYS_PTRACE would have passed). None of it outlives the thread.
struct Resolved {
  int fd = -1;
  int error = 0;
  struct stat st {};  // its fstat, made with the module's credentials too: /proc's getattr
                      // is where hidepid=invisible hides a process (ENOENT)
};

Resolved resolve_as_module(int root, int cwd, const std::string& path, const open_how& how,
                           uid_t uid, gid_t gid) {
  Resolved out;
  auto resolve = [&] {
    if (::unshare(CLONE_FS) != 0 || ::fchdir(root) != 0 || ::chroot(".") != 0 ||
        ::fchdir(cwd) != 0 || ::syscall(SYS_setgroups, 0, nullptr) != 0) {
      out.error = errno;
      return;
    }
    ::setfsgid(gid);
    ::setfsuid(uid);
    // setfsuid answers the previous id whatever happened: asked again (an invalid id changes
    // nothing), each must now be the module's.
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[2] = {};
    if (static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))) != uid ||
        static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))) != gid ||
        ::syscall(SYS_capget, &header, caps) != 0) {
      out.error = EPERM;
      return;
    }
    caps[0].effective = caps[1].effective = 0;
    if (::syscall(SYS_capset, &header, caps) != 0) {
      out.error = EPERM;
      return;
    }
    out.fd = static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how));
    if (out.fd < 0) {
      out.error = errno;
    } else if (::fstat(out.fd, &out.st) != 0) {
      out.error = errno;
      ::close(out.fd);
      out.fd = -1;
    }
  };
  try {
    std::thread(resolve).join();
  } catch (const std::system_error&) {
    out.error = EAGAIN;  // no thread: as the kernel answers when it is short of resources
  }
  if (out.fd < 0 && out.error == 0) out.error = EPERM;
  return out;
}

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
  // be still waiting: a thread killed meanwhile could have had its number reused. The thread's
  // own pidfd where the kernel has them (PIDFD_THREAD, Linux 6.9): its process's main thread
  // may have exited, and with it the descriptor table a pidfd of the process would reach.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, tid, kPidfdThread)));
  if (!pidfd.valid()) {
    const pid_t tgid = thread_group_of(tid);
    if (tgid > 0) pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, tgid, 0)));
  }
  UniqueFd instance(pidfd.valid() ? static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(),
                                                               static_cast<int>(data.args[0]), 0))
                                  : -1);
  const std::string proc = "/proc/" + std::to_string(tid);
  UniqueFd root(::open((proc + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  UniqueFd cwd(::open((proc + "/cwd").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
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
  if (!root.valid() || !cwd.valid()) {
    answer.error = ENOENT;
    return answer;
  }
  // Never through /proc's magic links (the module's own /proc is hidepid, and the thread's
  // /proc/self is this process).
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  if ((mask & IN_DONT_FOLLOW) != 0) how.flags |= O_NOFOLLOW;
  if ((mask & IN_ONLYDIR) != 0) how.flags |= O_DIRECTORY;
  how.resolve = RESOLVE_NO_MAGICLINKS;
  const Resolved resolved =
      resolve_as_module(root.get(), cwd.get(), answer.path, how, static_cast<uid_t>(user.uid),
                        static_cast<gid_t>(user.gid));
  UniqueFd target(resolved.fd);
  if (!target.valid()) {
    answer.error = resolved.error;
    return answer;
  }
  // Only what the module's own uid owns: no other module or user has that uid (the
  // registry's lease), so what is watched is the module's own (which root, an operator, or a
  // module whose policy names that directory may still open).
  if (static_cast<std::int64_t>(resolved.st.st_uid) != module_uid) {
    answer.error = EACCES;
    return answer;
  }
  // Through this process's descriptor of the very inode checked; IN_DONT_FOLLOW was applied
  // above, and would here stop at /proc's link instead.
  const std::string through = "/proc/self/fd/" + std::to_string(target.get());
  const int wd = ::inotify_add_watch(instance.get(), through.c_str(), mask & ~IN_DONT_FOLLOW);
  if (wd < 0) {
    answer.error = errno;
    return answer;
  }
  answer.value = wd;
  return answer;
}

}  // namespace oarbank
