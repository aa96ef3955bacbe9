// The module's own IPC namespace (issue 12; docs/sandbox-run.md "What a module sees"): entered
// by sandbox-run's child, as root, before the launcher's steps. Its SysV objects and POSIX
// message queues are the module's alone and end with its last process.
#pragma once

#include <cstdint>

#include "sys/unique_fd.hpp"

namespace oarbank {

// Where the module's own mount namespace shows its IPC namespace's queues (when the node has
// the directory: systemd makes it; a node without it gets the detached route below).
inline constexpr const char* kModuleMqueuePath = "/dev/mqueue";

// unshare(CLONE_NEWIPC). Returns 0, or the errno with `*what` naming the call.
// Async-signal-safe: the child shares its parent's memory.
int enter_own_ipc_namespace(const char** what);

// Attack review (session 15): a new IPC namespace starts with the kernel's limits, which bound
// nothing (shmmax and shmall about 2^64, msgmni 32000 queues of 16 KiB): a module made a 200 MiB
// SysV segment past its 64 MiB /dev/shm bound, memory the node's and not its cgroup's. The
// limits written into the module's namespace, from the node's module_shm_max_bytes: a segment
// and all segments together at most that (shmmax, shmall), message queues as many as that
// holds at their worst (msgmni: a queue of 16 KiB may hold 16384 empty messages, about 1.3 MiB
// of the kernel's; 51 queues for 64 MiB), semaphores 65536 in 4096 sets (sem). Each is a
// decimal text made before the child starts (the child is async-signal-safe).
struct IpcLimits {
  char shmmax[24] = {};
  char shmall[24] = {};
  char msgmni[24] = {};
  char sem[48] = {};
};
IpcLimits ipc_limits_for(std::uint64_t shm_max_bytes);

// Writes `limits` into this thread's IPC namespace (/proc/sys/kernel/shmmax, shmall, msgmni,
// sem: each names the namespace of whoever writes it). As root, right after entering or
// joining the module's namespace. Returns 0, or the errno with `*what` naming the file.
// Async-signal-safe.
int limit_ipc_namespace(const IpcLimits& limits, const char** what);

// setns into an IPC namespace made ahead (make_ipc_namespace, by the namespace stock).
// Returns 0, or the errno with `*what` naming the call. Async-signal-safe.
int join_ipc_namespace(int ipc_fd, const char** what);

// An IPC namespace made ahead, for a module not started yet (supervise/namespace_stock.hpp),
// with a detached mount of its mqueue filesystem: nobody has entered either.
struct IpcNamespace {
  UniqueFd ns;
  UniqueFd mqueue;
};
// Made by this thread, which unshares, takes both, and returns to its own namespace (an IPC
// namespace is per thread, as a network one is). Throws Error(StepFailed), step ipc, naming
// the call.
IpcNamespace make_ipc_namespace();

// A Landlock rule on this (new) IPC namespace's mqueue filesystem in the prepared ruleset
// (-1: none): POSIX message queues are files of that filesystem, reached through a mount of
// the kernel's own that no path of the policy names, so Landlock would refuse mq_open (EACCES)
// without it. The rule grants, of `handled_fs`, reading, writing, making and removing regular
// files there, which is all a queue is.
// `own_mounts` (the child is in the module's own mount namespace, after its mounts): the
// filesystem is mounted at kModuleMqueuePath (nosuid, nodev, noexec, as /dev/shm) when that
// is a directory, and the rule taken there; the mount goes with the namespace. Otherwise (or
// without the directory) a detached mount (fsmount) carries the rule and is closed at once:
// its release waits for an RCU grace period (~75 us), hence the first way where it can be.
// `mqueue_fd`: that detached mount made ahead (IpcNamespace::mqueue, for the namespace this
// process joined), used instead of a new one and left open: whoever made it holds it, and
// its release with it, off the run's path. -1: none.
// Returns 0, or the errno with `*what` naming the call. Async-signal-safe.
int add_own_mqueue_rule(int ruleset_fd, std::uint64_t handled_fs, bool own_mounts, int mqueue_fd,
                        const char** what);

}  // namespace oarbank
