// The module's own mounts (issue 12; docs/sandbox-run.md, "What a module sees"), as plain
// data: what sandbox-run's child mounts in the module's mount namespace before the launcher's
// steps (apply/module_mounts.hpp does it). Pure: --explain and the unit tests show it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/node_config.hpp"
#include "oarbank/policy.hpp"

namespace oarbank {

struct MountPlan {
  // sandbox-run started as root, with the node's module_mounts: the child makes a mount
  // namespace of its own. false: the module runs on the node's mounts (sandbox-exec, or
  // sandbox-run unprivileged), and nothing below is mounted or granted.
  bool enabled = false;
  // /dev/shm: a tmpfs of this size, mode 0700, owned by the module user.
  std::uint64_t shm_size_bytes = 0;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  // The writable directories (work, data, temp), each bind-mounted on itself nosuid and
  // nodev, and noexec unless the policy has exec_writable.
  std::vector<std::string> writable_dirs;
  bool writable_noexec = true;
  // /sys: a fresh sysfs, read-only, where the module has a network namespace of its own (which
  // the child joins before it mounts: sysfs shows the mounter's interfaces). In the node's
  // network namespace it would be the node's sysfs again (and the kernel refuses it read-only
  // beside the node's read-write mount: EBUSY).
  bool own_sysfs = false;
  // /sys/fs/cgroup: its own cgroup, read-only (session 18's real-programs review: the JVM, Go
  // and .NET size their heaps and threads from it, and found the node's instead). The child is
  // in its leaf already (clone3's CLONE_INTO_CGROUP); it makes a cgroup namespace there, so its
  // /proc/self/cgroup reads "0::/", and mounts cgroup2 on its own sysfs's /sys/fs/cgroup: the
  // leaf and nothing above it. Only with its own sysfs and a leaf.
  bool own_cgroup = false;
  // /tmp: a tmpfs of its own (session 19's real-programs review: glibc's tmpfile(3), ed, and
  // scripts that name /tmp whatever TMPDIR says failed), sized as /dev/shm, mode 1777, nosuid,
  // nodev, and noexec unless exec_writable, as systemd's PrivateTmp= gives a service. Its
  // Landlock rule (tmp_rights: temp's rights) is taken in the module's namespace alone, on the
  // tmpfs, never on the node's /tmp (which another path of the node's might show). Only where
  // no path of the plan (nor the broker's socket, with the grant) lies at or below /tmp, which
  // the tmpfs would hide: there the module keeps the node's /tmp, refused as before.
  bool own_tmp = false;
  std::uint64_t tmp_rights = 0;
  // Where it is not made: the first path given to the module that lies at or below /tmp
  // (session 20: the refusal of a write in /tmp names it, and how to get a /tmp of its own).
  std::string tmp_kept_by;
  // /etc/passwd and /etc/group: its own user database (plan/uid_leases.hpp's texts: root, its
  // user and nobody), where it runs as a uid of its own (a lease): getpwuid answers for it.
  bool own_user_database = false;
};

// Where the module's own file systems are mounted over the node's: /dev/shm, /proc,
// /dev/pts. A Landlock rule on one of these paths is taken again in the module's namespace.
bool is_module_mount_point(const std::string& path);

// /sys and what is below it: the module's own sysfs (its network namespace's interfaces alone)
// is mounted on /sys, and every Landlock rule on a path there is taken again in the module's
// namespace (the node's sysfs and the module's are two superblocks, each inode its own).
bool is_on_module_sysfs(const std::string& path);

// The plan for a module whose user is uid:gid and whose writable directories are these.
MountPlan make_mount_plan(const Policy& policy, const NodeConfig& config, std::uint32_t uid,
                          std::uint32_t gid, std::vector<std::string> writable_dirs);

// tmpfs's options for /dev/shm: "size=N,nr_inodes=M,mode=0700,uid=U,gid=G".
std::string shm_mount_options(const MountPlan& plan);
// tmpfs's options for its own /tmp: "size=N,nr_inodes=M,mode=1777" (root's, sticky: as the
// node's /tmp is, for programs that check it).
std::string tmp_mount_options(const MountPlan& plan);
// Whether a path lies at or below /tmp (its own /tmp would hide it).
bool is_at_or_below_tmp(const std::string& path);

// The fresh /proc: hidepid=invisible (Linux 5.8) hides every process the module's user may
// not ptrace-read, which Landlock (each module its own domain) narrows to its own.
inline constexpr const char* kProcMountOptions = "hidepid=invisible";
// The private devpts: its own numbering, /dev/ptmx (which opens the devpts instance mounted
// on the pts directory beside it, Linux 4.7) usable by the module, ptys its user's alone, and
// at most 32 of them: every devpts instance but the node's own draws on one kernel pool
// (kernel.pty.max less kernel.pty.reserve, 3072 by default), which a few modules at 256 each
// could empty for every other module and container on the node.
inline constexpr std::pair<const char*, const char*> kDevptsOptions[] = {
    {"ptmxmode", "0666"}, {"mode", "0600"}, {"max", "32"}};

}  // namespace oarbank
