#include "apply/ipc_namespace.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "plan/launch_steps.hpp"
#include "sys/error.hpp"
#include "sys/landlock_abi.hpp"

// Debian 12's headers know the new mount API's numbers but not all its flags.
#ifndef FSOPEN_CLOEXEC
#define FSOPEN_CLOEXEC 0x00000001
#endif
#ifndef FSMOUNT_CLOEXEC
#define FSMOUNT_CLOEXEC 0x00000001
#endif
#ifndef FSCONFIG_CMD_CREATE
#define FSCONFIG_CMD_CREATE 6
#endif

namespace oarbank {
namespace {

int ipc_call_failed(const char** what, const char* call) {
  *what = call;
  return errno;
}

// A detached mount of the mqueue filesystem of this thread's IPC namespace (Linux 5.2's mount
// API): the superblock is the namespace's own, the one mq_open uses, and Landlock ties rules
// to its inodes, so a rule on this mount's root covers the queues mq_open makes. -1 with
// `*what` and errno set on a failure.
int detached_mqueue_mount(const char** what) {
  const int fs = static_cast<int>(::syscall(SYS_fsopen, "mqueue", FSOPEN_CLOEXEC));
  if (fs < 0) return ipc_call_failed(what, "fsopen(mqueue)"), -1;
  if (::syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    const int err = ipc_call_failed(what, "fsconfig(mqueue, FSCONFIG_CMD_CREATE)");
    ::close(fs);
    errno = err;
    return -1;
  }
  const int mount = static_cast<int>(::syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, 0));
  const int err = errno;
  ::close(fs);
  if (mount < 0) {
    errno = err;
    return ipc_call_failed(what, "fsmount(mqueue)"), -1;
  }
  return mount;
}

}  // namespace

IpcLimits ipc_limits_for(std::uint64_t shm_max_bytes) {
  IpcLimits limits;
  const long page = ::sysconf(_SC_PAGESIZE);
  const std::uint64_t page_bytes = page > 0 ? static_cast<std::uint64_t>(page) : 4096;
  // A queue holds msgmnb bytes of text (16384 in a new namespace, which the module cannot
  // raise: IPC_SET above it needs CAP_SYS_RESOURCE) and as many messages, each a kernel
  // msg_msg of about 64 bytes even when empty: about 80 times msgmnb at worst (session 15's
  // second review filled 4096 queues with empty messages: 4.6 GiB).
  const std::uint64_t queues =
      std::max<std::uint64_t>(1, std::min<std::uint64_t>(32000, shm_max_bytes / (16384ULL * 80)));
  std::snprintf(limits.shmmax, sizeof limits.shmmax, "%llu",
                static_cast<unsigned long long>(shm_max_bytes));
  std::snprintf(limits.shmall, sizeof limits.shmall, "%llu",
                static_cast<unsigned long long>((shm_max_bytes + page_bytes - 1) / page_bytes));
  std::snprintf(limits.msgmni, sizeof limits.msgmni, "%llu",
                static_cast<unsigned long long>(queues));
  // SEMMSL SEMMNS SEMOPM SEMMNI: the kernel's per-set and per-call values, and 65536
  // semaphores in at most 4096 sets (the new namespace's are 32000 and 1024000000).
  std::snprintf(limits.sem, sizeof limits.sem, "32000 65536 500 4096");
  return limits;
}

int limit_ipc_namespace(const IpcLimits& limits, const char** what) {
  struct File {
    const char* path;
    const char* value;
  };
  const File files[] = {{"/proc/sys/kernel/shmmax", limits.shmmax},
                        {"/proc/sys/kernel/shmall", limits.shmall},
                        {"/proc/sys/kernel/msgmni", limits.msgmni},
                        {"/proc/sys/kernel/sem", limits.sem}};
  for (const File& file : files) {
    const int fd = ::open(file.path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return ipc_call_failed(what, file.path);
    const std::size_t length = std::strlen(file.value);
    const ssize_t written = ::write(fd, file.value, length);
    const int err = errno;
    ::close(fd);
    if (written != static_cast<ssize_t>(length)) {
      *what = file.path;
      return written < 0 ? err : EIO;
    }
  }
  return 0;
}

int enter_own_ipc_namespace(const char** what) {
  return ::unshare(CLONE_NEWIPC) == 0 ? 0 : ipc_call_failed(what, "unshare(CLONE_NEWIPC)");
}

int join_ipc_namespace(int ipc_fd, const char** what) {
  return ::setns(ipc_fd, CLONE_NEWIPC) == 0
             ? 0
             : ipc_call_failed(what, "setns(the module's IPC namespace)");
}

IpcNamespace make_ipc_namespace() {
  UniqueFd own(::open("/proc/thread-self/ns/ipc", O_RDONLY | O_CLOEXEC));
  if (!own.valid()) throw step_error(LaunchStep::Ipc, "open /proc/thread-self/ns/ipc", errno);
  if (::unshare(CLONE_NEWIPC) != 0)
    throw step_error(LaunchStep::Ipc, "unshare(CLONE_NEWIPC)", errno);
  IpcNamespace made;
  made.ns.reset(::open("/proc/thread-self/ns/ipc", O_RDONLY | O_CLOEXEC));
  int err = made.ns.valid() ? 0 : errno;
  const char* what = "open the new IPC namespace";
  if (err == 0) {
    made.mqueue.reset(detached_mqueue_mount(&what));
    if (!made.mqueue.valid()) err = errno;
  }
  // Back before anything is thrown: this thread must not stay in the new namespace.
  if (::setns(own.get(), CLONE_NEWIPC) != 0) {
    throw step_error(LaunchStep::Ipc, "setns back to the node's IPC namespace", errno);
  }
  if (err != 0) throw step_error(LaunchStep::Ipc, what, err);
  return made;
}

int add_own_mqueue_rule(int ruleset_fd, std::uint64_t handled_fs, bool own_mounts, int mqueue_fd,
                        const char** what) {
  const std::uint64_t rights =
      handled_fs & (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                    LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_REMOVE_FILE);
  if (ruleset_fd < 0 || rights == 0) return 0;
  int mount = -1;
  // The module's own mount namespace (mounts made private before): mqueue mounted on the
  // node's /dev/mqueue there, only where that is a directory and not a link (/dev is root's:
  // nothing else can swap it between the check and the mount). mount(2) of mqueue takes the
  // calling process's IPC namespace, this new one.
  // A directory removed between the lstat and the mount (ENOENT: the node's /dev is shared by
  // every mount namespace, and a test of ours makes and removes /dev/mqueue beside other runs)
  // is as if there were none: the queues go to an instance of their own below.
  struct stat st {};
  if (own_mounts && ::lstat(kModuleMqueuePath, &st) == 0 && S_ISDIR(st.st_mode)) {
    if (::mount("mqueue", kModuleMqueuePath, "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) ==
        0) {
      mount = ::open(kModuleMqueuePath, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (mount < 0) return ipc_call_failed(what, "open(/dev/mqueue) after its mount");
    } else if (errno != ENOENT) {
      return ipc_call_failed(what, "mount(mqueue on /dev/mqueue)");
    }
  }
  if (mount < 0 && mqueue_fd >= 0) {
    mount = mqueue_fd;  // its maker's, left open
  } else if (mount < 0) {
    mount = detached_mqueue_mount(what);
    if (mount < 0) return errno;
  }
  landlock::PathBeneathAttr rule{rights, mount};
  const int rc = landlock::add_rule(ruleset_fd, landlock::kRulePathBeneath, &rule, 0);
  const int err =
      rc == 0 ? 0 : ipc_call_failed(what, "landlock_add_rule(the IPC namespace's mqueue)");
  // The rule holds the inode; a detached mount made here goes with this descriptor.
  if (mount != mqueue_fd) ::close(mount);
  return err;
}

}  // namespace oarbank
