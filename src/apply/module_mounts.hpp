// The module's own mounts (issue 12; docs/sandbox-run.md, "What a module sees"): in
// sandbox-run's child, as root, after it joined the module's network namespace and before the
// launcher's steps, a mount namespace of its own with every mount private, then plan.mounts:
// a tmpfs on /dev/shm, each writable directory bind-mounted on itself nosuid,nodev (and
// noexec unless exec_writable), a fresh /proc with hidepid=invisible, a private devpts
// instance on /dev/pts. Nothing outlives the module: the namespace, and every mount in it,
// goes with its last process (no mount propagates back: private first).
//
// The module cannot undo them: it is no longer root once the identity step ran, and the
// filter refuses mount, umount2, the new mount API (fsopen, open_tree, move_mount,
// mount_setattr, ...) and unshare/setns (docs/seccomp.md).
#pragma once

#include "apply/launch.hpp"
#include "plan/mount_plan.hpp"
#include "plan/plan.hpp"
#include "sys/error.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {

// False with `error` filled on a failure (the caller reports "step mounts failed" and exits
// 70: the module never runs on the node's mounts when its own were asked for). The launch's
// descriptors of the writable directories and the working directory, opened by the parent
// in the node's namespace, are re-pointed (at the same numbers: this child's descriptor table
// is its own) at those directories as the new namespace shows them, after checking they are
// the same directories: a chdir through the old one would leave the module's working
// directory in the node's mount tree, beneath its own mounts.
// Last, the plan's Landlock rules on /dev/shm, /dev/pts and /proc are added again to the
// prepared ruleset, on the module's own mounts there.
// What the parent made for the child to attach, each detached: the module's devpts instance
// (make_devpts_instance), attached on /dev/pts; where plan.mounts.own_user_database, its own
// /etc/passwd and /etc/group (supervise/uid_registry.hpp's ModuleUserDatabase), attached over
// the node's.
struct ModuleMountSources {
  int devpts = -1;
  int passwd = -1;
  int group = -1;
};
bool make_module_mounts(const Plan& plan, const PreparedLaunch& prepared,
                        const ModuleMountSources& sources, StepError& error);

// The module's devpts instance, detached (fsopen, fsconfig, fsmount: Linux 5.2): made by the
// parent before the spawn, so that the module's terminal (supervise/terminal.hpp) is a pty of
// that instance, and attached by the child. Each fsmount of devpts is an instance of its own.
// Throws Error(StepFailed) naming the call (step mounts).
UniqueFd make_devpts_instance();

// The mount namespace this process is in (invalid when neither way answers): by its pidfd
// (PIDFD_GET_MNT_NAMESPACE, Linux 6.11: three calls, no path), else /proc's name of it, the
// only way on 6.2 to 6.10. `by_pidfd` false: /proc's alone (tests take each way on any kernel).
UniqueFd own_mount_namespace(bool by_pidfd = true);

}  // namespace oarbank
