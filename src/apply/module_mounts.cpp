#include "apply/module_mounts.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "plan/launch_steps.hpp"
#include "sys/landlock_abi.hpp"
#include "sys/unique_fd.hpp"

// Linux 6.11's pidfd ioctls (<linux/pidfd.h>; Debian 12's headers lack them).
#ifndef PIDFD_GET_MNT_NAMESPACE
#define PIDFD_GET_MNT_NAMESPACE _IO(0xFF, 3)
#endif

namespace oarbank {
namespace {

bool mount_failed(StepError& error, std::string what, int err) {
  error = StepError{std::move(what), err};
  return false;
}

bool mount_fs(const char* type, const char* target, unsigned long flags, const std::string& options,
              StepError& error) {
  if (::mount(type, target, type, flags, options.c_str()) != 0) {
    const int err = errno;
    return mount_failed(error,
                        std::string("mount(") + type + " on " + target + ", " + options + ")", err);
  }
  return true;
}

// `path` opened in this namespace (O_PATH; `follow`: a symbolic link at its end is followed,
// else refused); when `checked_fd` is a descriptor, it must be the same directory (device and
// inode) as that one, which the parent checked: a path swapped meanwhile is refused, not
// mounted.
UniqueFd open_same_dir(const std::string& path, int checked_fd, StepError& error,
                       bool follow = false) {
  UniqueFd fd(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW)));
  if (!fd.valid()) {
    const int err = errno;
    mount_failed(error, "open(" + path + ") in the module's mount namespace", err);
    return fd;
  }
  if (checked_fd < 0) return fd;
  struct stat now {
  }, checked{};
  if (::fstat(fd.get(), &now) != 0 || ::fstat(checked_fd, &checked) != 0) {
    const int err = errno;
    mount_failed(error, "fstat(" + path + ")", err);
    return UniqueFd();
  }
  if (now.st_dev != checked.st_dev || now.st_ino != checked.st_ino) {
    mount_failed(error,
                 path +
                     " in the module's mount namespace is not the directory the launch checked "
                     "(replaced meanwhile)",
                 ESTALE);
    return UniqueFd();
  }
  return fd;
}

// The directory bind-mounted on itself (with what is mounted below it) carrying the flags;
// the new mount API (open_tree, mount_setattr: Linux 5.12, below every kernel that runs a
// module, which needs Landlock ABI 3) sets them on the copy before it is attached, and keeps
// what the node's mount already had (read-only stays read-only).
bool bind_with_flags(const std::string& path, int checked_fd, std::uint64_t attr_set,
                     StepError& error) {
  UniqueFd dir = open_same_dir(path, checked_fd, error);
  if (!dir.valid()) return false;
  UniqueFd tree(::open_tree(dir.get(), "",
                            OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH));
  if (!tree.valid()) {
    const int err = errno;
    return mount_failed(error, "open_tree(" + path + ", OPEN_TREE_CLONE)", err);
  }
  struct mount_attr attr {};
  attr.attr_set = attr_set;
  if (::mount_setattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) != 0) {
    const int err = errno;
    return mount_failed(error, "mount_setattr(" + path + ")", err);
  }
  if (::move_mount(tree.get(), "", dir.get(), "",
                   MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
    const int err = errno;
    return mount_failed(error, "move_mount(" + path + " on itself)", err);
  }
  return true;
}

// The launch's descriptor `fd` for `path` made to name the directory as this namespace
// shows it (on top of any mount there), at the same number.
bool repoint(const std::string& path, int fd, StepError& error, bool follow = false) {
  if (fd < 0) return true;
  UniqueFd now = open_same_dir(path, fd, error, follow);
  if (!now.valid()) return false;
  if (::dup3(now.get(), fd, O_CLOEXEC) < 0) {
    const int err = errno;
    return mount_failed(error, "dup3(" + path + ")", err);
  }
  return true;
}

// Landlock skips a mount point hidden beneath another mount when it walks up from a file
// (security/landlock/fs.c: "Ignores hidden mount points"): the parent's rule on the node's
// /dev/shm, /dev/pts or /proc does not reach below what is mounted there now; and a rule on a
// path below /sys named an inode of the node's sysfs, not of the module's. The same rule,
// with the same rights, is taken again on what the module's namespace shows at that path,
// in the ruleset the parent prepared (not yet enforced: the landlock step comes later).
bool retake_rules(const LandlockPlan& landlock, bool own_sysfs, int ruleset, StepError& error) {
  for (const auto& rule : landlock.path_rules) {
    const bool on_own_sysfs = own_sysfs && is_on_module_sysfs(rule.path);
    if (rule.access == 0 || (!is_module_mount_point(rule.path) && !on_own_sysfs)) continue;
    UniqueFd fd(::open(rule.path.c_str(), O_PATH | O_CLOEXEC));
    if (!fd.valid()) {
      const int err = errno;
      return mount_failed(error, "open(" + rule.path + ") for its Landlock rule", err);
    }
    landlock::PathBeneathAttr beneath{rule.access, fd.get()};
    if (landlock::add_rule(ruleset, landlock::kRulePathBeneath, &beneath, 0) != 0) {
      const int err = errno;
      return mount_failed(error, "landlock_add_rule(" + rule.path + ", " + rule.why + ")", err);
    }
  }
  return true;
}

}  // namespace

UniqueFd make_devpts_instance() {
  UniqueFd context(::fsopen("devpts", FSOPEN_CLOEXEC));
  if (!context.valid()) throw step_error(LaunchStep::Mounts, "fsopen(devpts)", errno);
  for (const auto& [key, value] : kDevptsOptions) {
    if (::fsconfig(context.get(), FSCONFIG_SET_STRING, key, value, 0) != 0) {
      throw step_error(LaunchStep::Mounts,
                       std::string("fsconfig(devpts, ") + key + "=" + value + ")", errno);
    }
  }
  if (::fsconfig(context.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    throw step_error(LaunchStep::Mounts, "fsconfig(devpts, FSCONFIG_CMD_CREATE)", errno);
  }
  UniqueFd mount(::fsmount(context.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC));
  if (!mount.valid()) throw step_error(LaunchStep::Mounts, "fsmount(devpts)", errno);
  return mount;
}

bool make_module_mounts(const Plan& launch_plan, const PreparedLaunch& prepared,
                        const ModuleMountSources& sources, StepError& error) {
  const MountPlan& plan = launch_plan.mounts;
  if (!plan.enabled) return true;
  if (::unshare(CLONE_NEWNS) != 0) {
    const int err = errno;
    return mount_failed(error, "unshare(CLONE_NEWNS)", err);
  }
  // Before anything is mounted: no mount made here may propagate to the node's namespace
  // (systemd makes / shared), and none of the node's later mounts reach the module.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    const int err = errno;
    return mount_failed(error, "mount(/, MS_REC | MS_PRIVATE)", err);
  }
  // /dev/shm first: a writable directory below it would be hidden by the module's own, and is
  // refused below (not found) rather than used on the node's.
  if (!mount_fs("tmpfs", "/dev/shm", MS_NOSUID | MS_NODEV | MS_NOEXEC, shm_mount_options(plan),
                error)) {
    return false;
  }
  // Its own /tmp (MountPlan::own_tmp), where the node's is a directory (not a link: the
  // node's /tmp is root's, nothing else swaps it between the check and the mount).
  struct stat tmp_st {};
  const bool own_tmp = plan.own_tmp && ::lstat("/tmp", &tmp_st) == 0 && S_ISDIR(tmp_st.st_mode);
  const unsigned long tmp_flags =  // NOLINT(google-runtime-int): mount(2)'s type
      MS_NOSUID | MS_NODEV | (plan.writable_noexec ? static_cast<unsigned long>(MS_NOEXEC) : 0UL);
  if (own_tmp && !mount_fs("tmpfs", "/tmp", tmp_flags, tmp_mount_options(plan), error)) {
    return false;
  }
  const std::uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                              (plan.writable_noexec ? MOUNT_ATTR_NOEXEC : std::uint64_t{0});
  for (std::size_t i = 0; i < plan.writable_dirs.size(); ++i) {
    const int fd = i < prepared.writable_dir_fds.size() ? prepared.writable_dir_fds[i] : -1;
    if (!bind_with_flags(plan.writable_dirs[i], fd, attrs, error)) return false;
  }
  if (!mount_fs("proc", "/proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, kProcMountOptions, error)) {
    return false;
  }
  // A fresh sysfs, read-only, made in the module's network namespace, which this process
  // joined first (supervise/module_run.cpp): sysfs shows the mounter's. The node's /sys showed
  // every interface of the node's (/sys/class/net/NAME: Landlock does not govern stat, so
  // their names were the module's to learn), and its mounts below (/sys/fs/cgroup, bpf,
  // tracing); this one shows the module's own loopback alone, and nothing is mounted below it.
  if (plan.own_sysfs &&
      !mount_fs("sysfs", "/sys", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "", error)) {
    return false;
  }
  // Its own cgroup (MountPlan::own_cgroup): a cgroup namespace rooted at the leaf it was
  // cloned into (Linux 4.6), and cgroup2 mounted there read-only, which shows that namespace's
  // root and what is below it. The filter refuses the module any other cgroup namespace.
  if (plan.own_cgroup) {
    if (::unshare(CLONE_NEWCGROUP) != 0) {
      const int err = errno;
      return mount_failed(error, "unshare(CLONE_NEWCGROUP)", err);
    }
    if (!mount_fs("cgroup2", "/sys/fs/cgroup", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "",
                  error)) {
      return false;
    }
  }
  if (::move_mount(sources.devpts, "", AT_FDCWD, "/dev/pts", MOVE_MOUNT_F_EMPTY_PATH) != 0) {
    const int err = errno;
    return mount_failed(error, "move_mount(the module's devpts instance on /dev/pts)", err);
  }
  // Its own user database over the node's files (root's, 0644: read as the node's are, under
  // the same Landlock rule on /etc). A mount of a file needs a file there: a node without
  // /etc/passwd or /etc/group has no names to show either way, and keeps none.
  if (plan.own_user_database) {
    for (const auto& [fd, target] :
         {std::pair{sources.passwd, "/etc/passwd"}, std::pair{sources.group, "/etc/group"}}) {
      if (fd < 0) {
        return mount_failed(error, std::string("the module's own ") + target + " was not made",
                            EBADF);
      }
      if (::move_mount(fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) != 0 && errno != ENOENT) {
        const int err = errno;
        return mount_failed(error, std::string("move_mount(the module's own ") + target + ")", err);
      }
    }
  }
  for (std::size_t i = 0; i < plan.writable_dirs.size(); ++i) {
    const int fd = i < prepared.writable_dir_fds.size() ? prepared.writable_dir_fds[i] : -1;
    if (!repoint(plan.writable_dirs[i], fd, error)) return false;
  }
  // The working directory may be the bundle, whose path may hold a link (the writable
  // directories never do: the directory rule refuses them).
  if (!repoint(prepared.working_directory, prepared.working_directory_fd, error, true)) {
    return false;
  }
  if (own_tmp && plan.tmp_rights != 0 && prepared.ruleset.valid()) {
    UniqueFd tmp(::open("/tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    landlock::PathBeneathAttr beneath{plan.tmp_rights, tmp.get()};
    if (!tmp.valid() ||
        landlock::add_rule(prepared.ruleset.get(), landlock::kRulePathBeneath, &beneath, 0) != 0) {
      const int err = errno;
      return mount_failed(error, "landlock_add_rule(its own /tmp)", err);
    }
  }
  return retake_rules(launch_plan.landlock, plan.own_sysfs, prepared.ruleset.get(), error);
}

UniqueFd own_mount_namespace(bool by_pidfd) {
  const UniqueFd self(by_pidfd ? static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0)) : -1);
  if (self.valid()) {
    UniqueFd ns(::ioctl(self.get(), PIDFD_GET_MNT_NAMESPACE, 0));
    if (ns.valid()) return ns;  // ENOTTY before 6.11
  }
  return UniqueFd(::open("/proc/thread-self/ns/mnt", O_RDONLY | O_CLOEXEC));
}

}  // namespace oarbank
