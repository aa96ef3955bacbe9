#include "supervise/inotify_watch.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "sys/descriptor_passing.hpp"
#include "sys/text_file.hpp"
#include "sys/unique_fd.hpp"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL  // Linux 5.7
#endif
#ifndef P_PIDFD
#define P_PIDFD 3  // Linux 5.4
#endif

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

// The path resolved as the module resolves it, by a child process of its own that then exits
// (a process, not a thread: procfs shows a thread its own thread group whatever hidepid says,
// and this one's would be the supervisor's; session 11's second review). It shares nothing with
// the supervisor but what it is given: it enters the module's network, IPC and UTS namespaces
// (what /proc shows the opener), closes every descriptor but its report socket (its
// /proc/self/fd is what a module's path may reach: a shared table showed the supervisor's;
// the third review), is chrooted to the module's root and in the module's working directory,
// so an absolute link resolves inside that root and ".." stops there; the module's uid and gid
// are its file-system credentials, with no supplementary groups and no effective capabilities,
// so a path the module may not search answers EACCES whether or not something is there, and
// /proc's hidepid hides what it hides from the module (CAP_SYS_PTRACE would pass it). It runs in
// the module's cgroup leaf (CLONE_INTO_CGROUP), where there is one: a path made to be slow to
// walk costs the module's CPU, not the node's. What it opened comes back by SCM_RIGHTS.
struct Resolved {
  int fd = -1;
  int error = 0;
  struct stat st {};  // its fstat, made with the module's credentials too: /proc's getattr
                      // is where hidepid=invisible hides a process (ENOENT)
};

// The child's report socket, at a number of its own: its /proc/self/fd, which a module's path
// reaches (through its /proc/self), then always lists this one number alone, whatever the
// supervisor's descriptor table held (a review: the lowest free number told how full it was).
// Standard input's: the child reads and writes nothing else.
constexpr int kReportFd = 0;

// The namespaces whose view /proc gives the opener's, not the mount's: /proc/sys/net and
// /proc/self/net (the module's network namespace: only its loopback; in the supervisor's, the
// node's interfaces answered EACCES where the module's own stat says ENOENT, an oracle of
// their names; a review), /proc/sysvipc (its IPC namespace), /proc/sys/kernel's hostname.
constexpr int kModuleNamespaces = CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;

// In the child: system calls only (it is a fork of a threaded process), its answer sent on
// `report` with what it opened, then _exit.
// The child's view and credentials, the module's: the namespaces above, taken from the calling
// thread's pidfd (setns with a pidfd: Linux 5.8); its root and working directory; no descriptor
// but `report`, moved to kReportFd; its fsuid and fsgid, no groups, no effective capabilities.
// 0, or the errno that stopped it.
int become_module_view(int& report, int thread, int root, int cwd, uid_t uid, gid_t gid) {
  if (::setns(thread, kModuleNamespaces) != 0 || ::fchdir(root) != 0 || ::chroot(".") != 0 ||
      ::fchdir(cwd) != 0) {
    return errno;
  }
  if (report != kReportFd) {
    if (::dup3(report, kReportFd, O_CLOEXEC) != kReportFd) return errno;
    report = kReportFd;
  }
  static_assert(kReportFd == 0);
  if (::syscall(SYS_close_range, static_cast<unsigned>(kReportFd) + 1, ~0U, 0U) != 0 ||
      ::syscall(SYS_setgroups, 0, nullptr) != 0) {
    return errno;
  }
  ::setfsgid(gid);
  ::setfsuid(uid);
  // setfsuid answers the previous id whatever happened: asked again (an invalid id changes
  // nothing), each must now be the module's.
  if (static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))) != uid ||
      static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))) != gid) {
    return EPERM;
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[2] = {};
  if (::syscall(SYS_capget, &header, caps) != 0) return EPERM;
  caps[0].effective = caps[1].effective = 0;
  return ::syscall(SYS_capset, &header, caps) == 0 ? 0 : EPERM;
}

bool is_procfs(int fd) {
  struct statfs fs {};
  return ::fstatfs(fd, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
}

// In the child: system calls only (it is a fork of a threaded process), its answer sent on
// `report` with what it opened, then _exit.
[[noreturn]] void resolve_in_child(int report, int thread, int root, int cwd, const char* path,
                                   const open_how& how, uid_t uid, gid_t gid) {
  Resolved out;
  out.error = become_module_view(report, thread, root, cwd, uid, gid);
  if (out.error == 0) {
    out.fd = static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how));
    if (out.fd < 0) {
      // This child is a fork of the supervisor: its /proc/self/map_files/START-END answers
      // EPERM for a mapping that is there (no CAP_CHECKPOINT_RESTORE) and ENOENT for one that
      // is not, the supervisor's memory layout. EPERM is said as ENOENT.
      out.error = errno == EPERM ? ENOENT : errno;
    } else if (::fstat(out.fd, &out.st) != 0) {
      out.error = errno;
      out.fd = -1;  // the process's exit closes it
    } else if (S_ISLNK(out.st.st_mode) && is_procfs(out.fd)) {
      // A /proc link opened itself (IN_DONT_FOLLOW): /proc/self's are this child's, so their
      // being there is the supervisor's (map_files/START-END: its memory layout; a review), and
      // /proc/PID's of the module's own processes are nothing to watch. Said as no such file.
      out.error = ENOENT;
      out.fd = -1;
    }
  }
  const int opened[1] = {out.fd};
  const std::string_view bytes(reinterpret_cast<const char*>(&out), sizeof out);
  const int err = send_with_descriptors(
      report, bytes, out.fd >= 0 ? std::span<const int>(opened) : std::span<const int>(), nullptr,
      0);
  ::_exit(err == 0 ? 0 : 1);
}

Resolved resolve_as_module(int thread, int root, int cwd, const std::string& path,
                           const open_how& how, uid_t uid, gid_t gid, int leaf) {
  Resolved out;
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
    out.error = errno;
    return out;
  }
  UniqueFd mine(ends[0]);
  UniqueFd theirs(ends[1]);
  int pidfd = -1;
  clone_args args{};
  args.flags = CLONE_PIDFD | (leaf >= 0 ? CLONE_INTO_CGROUP : 0);
  args.pidfd = reinterpret_cast<std::uintptr_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  args.cgroup = leaf >= 0 ? static_cast<std::uint64_t>(leaf) : 0;
  const long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) {
    resolve_in_child(theirs.get(), thread, root, cwd, path.c_str(), how, uid, gid);
  }
  if (pid < 0) {
    out.error = errno == EBUSY || errno == ENOENT ? EAGAIN : errno;  // the leaf is gone
    return out;
  }
  UniqueFd child(pidfd);
  theirs.reset();  // the child's own copy is its end: the receive ends when it exits
  Resolved got;
  std::vector<UniqueFd> received;
  ssize_t n = 0;
  while ((n = receive_with_descriptors(mine.get(), reinterpret_cast<char*>(&got), sizeof got,
                                       received, 0)) < 0 &&
         errno == EINTR) {
  }
  siginfo_t info{};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(child.get()), &info, WEXITED) <
             0 &&
         errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof got)) {
    out.error = EAGAIN;  // killed (the container's teardown) or out of resources
    return out;
  }
  got.fd = -1;
  if (got.error == 0) {
    if (received.size() != 1) {
      got.error = EAGAIN;
      return got;
    }
    got.fd = received.front().release();
  }
  return got;
}

}  // namespace

WatchAnswer add_watch_for_module(pid_t tid, const seccomp_data& data, const ModuleUser& user,
                                 int listener, std::uint64_t id) {
  WatchAnswer answer;
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
  // /proc/self is the resolving child).
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  if ((mask & IN_DONT_FOLLOW) != 0) how.flags |= O_NOFOLLOW;
  if ((mask & IN_ONLYDIR) != 0) how.flags |= O_DIRECTORY;
  how.resolve = RESOLVE_NO_MAGICLINKS;
  const Resolved resolved =
      resolve_as_module(pidfd.get(), root.get(), cwd.get(), answer.path, how,
                        static_cast<uid_t>(user.uid), static_cast<gid_t>(user.gid), user.leaf);
  UniqueFd target(resolved.fd);
  if (!target.valid()) {
    answer.error = resolved.error;
    return answer;
  }
  // Only what the module's own uid owns: no other module or user has that uid (the
  // registry's lease), so what is watched is the module's own (which root, an operator, or a
  // module whose policy names that directory may still open).
  if (static_cast<std::int64_t>(resolved.st.st_uid) != user.uid) {
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
