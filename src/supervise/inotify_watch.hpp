// inotify under a uid of the module's own (+own-user), governed by the supervisor.
//
// Landlock does not govern inotify_add_watch (no ABI up to 7): the kernel checks only the
// caller's read permission on what it watches, which every uid has on /tmp, /usr/bin, /home and
// another module's root-owned 0755 input directories (session 11's attack review watched all
// of them from inside). So under +own-user the notifying filter lets the module make its own
// inotify instances (charged to its own uid's limits) and sends every inotify_add_watch here.
// The supervisor resolves the path as the module would (from its root, or its working
// directory), and adds the watch to the module's own instance only when what the path leads
// to belongs to the module's own uid: its work, data and temp as sandbox-run made them, and
// what it made inside. Anything else is EACCES, recorded as a denial. The watch is added on the
// very inode resolved here (through this process's descriptor of it), from a copy of the
// path read once: a thread of the module that rewrites the path meanwhile changes nothing.
#pragma once

#include <linux/seccomp.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace oarbank {

// The answer to the module's call: the watch descriptor, or an errno (error != 0).
struct WatchAnswer {
  std::int64_t value = 0;
  int error = 0;
  std::string path;  // the path the module named, for the denial's record
};

struct ModuleUser {
  std::int64_t uid = -1;  // -1: the module has no uid of its own; every watch refused EPERM
  std::int64_t gid = -1;
  int leaf = -1;  // the module's cgroup leaf, where the resolving child runs; -1: none
};

// inotify_add_watch(args[0], args[1], args[2]) of thread `tid` (the notification's pid), for a
// module of its own `user`. The path is resolved by a short-lived child process in the module's
// network, IPC and UTS namespaces, chrooted to the module's root, with the module's uid and gid as
// its file-system credentials and no capabilities (inotify_watch.cpp, resolve_as_module), so that
// it searches only what the module may search: root's own search rights would make the answer
// (ENOENT or EACCES) an oracle for what exists where the module cannot look. `listener` and `id`
// check, after every descriptor of the caller is taken, that the caller still waits: then the
// caller's root, working directory and instance are the ones it made the call with.
WatchAnswer add_watch_for_module(pid_t tid, const seccomp_data& data, const ModuleUser& user,
                                 int listener, std::uint64_t id);

}  // namespace oarbank
