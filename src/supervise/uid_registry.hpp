// Issue 12, "Its own user": the registry of module users. Each module id that sandbox-run
// (as root) runs gets a uid and the gid of the same number from the node's range
// (module_users), the same on every run of that id: its directories and files stay its own
// across runs. One file per lease, ID.lease (plan/uid_leases.hpp), and one per number taken,
// N.uid (naming its id: a number is reserved once, O_EXCL), in the registry directory, read
// and written under an exclusive flock of the directory's "lock" file. A lease is written
// whole to ID.lease.new, fsync'd and renamed over the old one, so a reader never sees half a
// lease and a crash leaves the old one or the new one. One file per id keeps a known id's run
// at one small read, however many leases the node holds.
//
// Its place is not the run state directory: /run/oarbank/runs is a tmpfs that a reboot
// empties, and a lease must outlive reboots as long as files of its uid do (a module's work
// and data directories are on disk). So: $OARBANK_USER_REGISTRY, else
// /var/lib/oarbank/module-users, opened as the run state directory is (no symbolic link at
// any component, root's alone). A policy that names it is refused, as one naming the run
// state directory is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/node_config.hpp"
#include "plan/uid_leases.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {

inline constexpr const char* kUserRegistryEnvVar = "OARBANK_USER_REGISTRY";

// $OARBANK_USER_REGISTRY (absolute), else /var/lib/oarbank/module-users.
std::string user_registry_dir();

// systemd's reservations of dynamic users (DynamicUser=): a file or link per number it has
// handed out, while it is handed out. $OARBANK_DYNAMIC_UID_DIR (absolute; for tests, which
// cannot make systemd hand out a number), else /run/systemd/dynamic-uid.
inline constexpr const char* kDynamicUidDirEnvVar = "OARBANK_DYNAMIC_UID_DIR";
std::string dynamic_uid_dir();

// The directory of the subordinate id files, subuid and subgid (newuidmap's delegations of
// uid and gid ranges to users). $OARBANK_SUBORDINATE_IDS_DIR (absolute; for the tests, which
// must not edit the node's), else /etc.
inline constexpr const char* kSubordinateIdsDirEnvVar = "OARBANK_SUBORDINATE_IDS_DIR";
std::string subordinate_ids_dir();

// Issue 12's review: what names a leased number now, besides its lease. The default range is
// systemd's own for dynamic users, and systemd checks our leases nowhere: it may hand a
// leased number to a DynamicUser= service after the lease was made. Checked on every run of
// the id (one lstat of dynamic_uid_dir()/N, and /etc/passwd, /etc/group, /etc/subuid and
// /etc/subgid read, each a few kilobytes; not NSS, which would start getent on every run).
// A subordinate range that holds the number names it too (attack review: its owner can run
// processes as that number through newuidmap, unprivileged). "" when nothing does, else what
// names it.
std::string leased_uid_conflict(std::uint32_t uid);

// Whether the system's user or group database names `id` as a uid or gid: /etc/passwd and
// /etc/group read directly, systemd's reservations of dynamic users
// (/run/systemd/dynamic-uid/<id>, which NSS names only while the unit runs), then NSS
// (systemd's dynamic users, LDAP or sssd) through getent(1) where /etc/nsswitch.conf names
// a source besides "files" for passwd or group, since this static binary cannot load NSS
// modules itself. Throws Error(StepFailed) when that getent is missing or fails otherwise
// than "not found": fail closed.
bool user_database_names(std::uint32_t id);

// The lease of `id`, made when it has none (the lowest free number of `range` that no lease
// holds, the user database does not name and no running process holds as a uid or gid), with its
// last run set to `now` and `paths` remembered. The lease is written only when it changed (a new
// lease or path, or a last run more than an hour older than `now`): most runs of a known id read it
// and write nothing. Throws Error(Unenforceable) when the range has no free number left or the id's
// lease names a number that leased_uid_conflict finds named now (fail closed: two users on one
// uid), Error(StepFailed) when the registry cannot be read, trusted or written.
// With `database`, the module's own /etc/passwd and /etc/group for that lease too (below).
struct ModuleUserDatabase;
UidLease lease_module_user(const std::string& dir, const std::string& id,
                           const ModuleUserRange& range, const std::vector<std::string>& paths,
                           std::int64_t now, ModuleUserDatabase* database = nullptr);

// Session 14's attack reviews: the directories a run of `id` is given to write, added to its
// lease before any is made (a sandbox-run killed from there on leaves them in the lease, where
// reclaim looks), and taken out again by forget_lease_paths when the run ends without its
// module having run: a refused run's paths (a typo under /etc, work inside the bundle) are not
// the id's history, which would refuse every later plan (earlier_writable_problem). Each writes
// only when it changes the lease. Throw as lease_module_user does.
void remember_lease_paths(const std::string& dir, const std::string& id,
                          const std::vector<std::string>& paths);
void forget_lease_paths(const std::string& dir, const std::string& id,
                        const std::vector<std::string>& paths);

// Session 13: the module's own /etc/passwd and /etc/group (plan/uid_leases.hpp's
// module_passwd_text and module_group_text), each a file of the registry's (ID.UID.passwd,
// ID.UID.group: root's, 0644, written once per lease, whole or not at all, removed with the
// lease) cloned as a detached mount (open_tree OPEN_TREE_CLONE, in the node's mount
// namespace, where the kernel lets a clone be made), for sandbox-run's child to attach over the
// node's files in the module's own mount namespace (apply/module_mounts.hpp).
struct ModuleUserDatabase {
  std::string home = "/";  // in: the run's HOME, the user's home in its passwd
  UniqueFd passwd;
  UniqueFd group;
};

// Every lease, sorted by id (an empty list when there is no registry yet).
std::vector<UidLease> list_module_users(const std::string& dir);

// Session 20: the module id that number `uid` is reserved for in the registry at `dir` (its
// N.uid file), or nothing (no registry, or the number free): so that a run given another
// module's directory is told whose it is.
std::optional<std::string> module_id_of_uid(const std::string& dir, std::uint32_t uid);

// What stops `lease` from being reclaimed now: its last run fewer than `days` days before
// `now`, or a file or directory of its uid or gid left in a directory its runs were given
// (walked without following symbolic links or crossing mounts; the first one named, with
// how to re-own it). "" when nothing does. The caller checks that no run of the id is live.
std::string reclaim_obstacle(const UidLease& lease, std::int64_t now, std::uint32_t days);

// Removes the lease of `id` when reclaim_obstacle finds nothing, under the registry's lock;
// `still_running` is asked under that lock too. Returns the removed lease. Throws
// Error(NotFound) when `id` has no lease, Error(Busy) when it runs, Error(Unenforceable)
// naming the obstacle.
UidLease reclaim_module_user(const std::string& dir, const std::string& id, std::uint32_t days,
                             std::int64_t now, bool (*still_running)(const std::string& id));

}  // namespace oarbank
