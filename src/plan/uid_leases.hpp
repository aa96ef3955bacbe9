// Issue 12, "Its own user": the pure part of the module user registry. Each module id leases
// one uid (and the gid of the same number) from the node's range (module_users), the same on
// every run of that id; supervise/uid_registry.hpp keeps the leases on disk, under a lock.
// Here: a lease's text, which number a new id gets, and when a lease may be reclaimed. No
// kernel call, no file (the registry and the user database are asked through `taken`).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oarbank {

struct UidLease {
  std::string id;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::int64_t leased_at = 0;  // Unix time
  std::int64_t last_run = 0;   // Unix time of a run's start (rewritten at most hourly)
  // Every writable directory a run of this id was given (work, temp, data), but for runs that
  // ended without their module having run (session 14): the only places the module could leave
  // files of its uid (Landlock grants it nothing else to write; its /dev/shm and IPC objects
  // end with the run). Reclaim looks there.
  std::vector<std::string> paths;
  friend bool operator==(const UidLease&, const UidLease&) = default;
};

// A lease's file: {"id", "uid", "gid", "leased_at", "last_run", "paths"}.
std::string uid_lease_to_json(const UidLease& lease);
// nullopt (with `problem`) for text that is not such a lease, or one with uid or gid 0: a
// lease that cannot be trusted is never guessed at.
std::optional<UidLease> uid_lease_from_json(const std::string& text, std::string& problem);

// The lowest number in [first, last] that is not 0 nor 65534 (the overflow uid) and that
// `taken` does not claim (leased, or named by the user and group databases); nullopt when
// none is left.
std::optional<std::uint32_t> choose_module_uid(std::uint32_t first, std::uint32_t last,
                                               const std::function<bool(std::uint32_t)>& taken);

// Every uid and gid a process holds, from the text of its /proc/PID/status: the real,
// effective, saved and file-system ids of its "Uid:" and "Gid:" lines and its supplementary
// "Groups:". A number any of them names is in use by a running process, and is not leased:
// a process of that uid outside the sandbox could signal, ptrace and read the module, enter
// its directories and its /dev/shm (the kernel's same-user checks let it).
std::vector<std::uint32_t> proc_status_ids(std::string_view status);

// Whether the text of a colon-separated database (passwd, group: "NAME:PW:ID:..." a line) has an
// entry whose third field is `id`, or, with `primary_group` (passwd's), whose fourth is: the
// leased number is the module's gid too, and an account whose primary group it is (useradd -g
// NUMBER leaves no /etc/group line) would share the module's group (attack review, session 16).
bool database_names(std::string_view text, std::uint32_t id, bool primary_group = false);

// The line of a subordinate id file (/etc/subuid or /etc/subgid: "OWNER:START:COUNT" a
// line) whose range holds `id`; nullopt when none does. Attack review: newuidmap and
// newgidmap (setuid root) let OWNER map that range into a user namespace of theirs and run
// processes as those very numbers on the node, so a module leased one would share it.
std::optional<std::string> subordinate_range_holding(std::string_view text, std::uint32_t id);

// Whether a lease is old enough to be reclaimed: its last run at least `days` days before
// `now`. (Its files must also be gone or re-owned: uid_registry checks that.)
bool lease_is_due(const UidLease& lease, std::int64_t now, std::uint32_t days);

// Adds `path` to the lease's paths (sorted, once). True when it was not there yet.
bool remember_lease_path(UidLease& lease, const std::string& path);

// The module's own user database (session 13), which its mount namespace shows at /etc/passwd
// and /etc/group: root, its own user and nobody, as flatpak shows a sandboxed app, so that
// getpwuid and getgrgid answer for its uid and gid (whoami, id -gn, Node's os.userInfo(),
// Python's getpass.getuser(), a shell's prompt) and the node's accounts are not listed. Its
// user is named module_user_name(id), home `home` (the run's HOME, plan.hpp's module_home:
// ssh-keygen and Java's user.home read it here, not from the environment; "/" where the path
// holds a ':' or a newline, which the file's format cannot carry), no login shell, as systemd's
// dynamic users are.
std::string module_user_name(std::string_view id);
std::string module_passwd_text(const UidLease& lease, const std::string& home = "/");
std::string module_group_text(const UidLease& lease);

}  // namespace oarbank
