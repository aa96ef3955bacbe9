#include "plan/world_json.hpp"

#include <nlohmann/json.hpp>
#include <string>

namespace oarbank {
namespace {

using nlohmann::json;

json user_json(const IdentityPlan& identity) {
  if (!identity.change) {
    return {{"kind", "caller"}, {"uid", "the caller's own (started unprivileged)"}};
  }
  json user{{"uid", identity.uid}, {"gid", identity.gid}};
  switch (identity.source) {
    case ModuleUserSource::Caller:
    case ModuleUserSource::ModuleUser:
      user["kind"] = "module_user";
      user["shared"] = "every module run as module_user has this uid";
      break;
    case ModuleUserSource::Own:
      user["kind"] = "own";
      user["shared"] = "no: leased to this module id alone (module_users)";
      break;
    case ModuleUserSource::OwnLeasedAtRun:
      // The id has no lease yet: the run leases the lowest free number of module_users, and
      // what the plan shows for uid and gid (module_user's) is not what it runs as.
      user = {{"kind", "own"},
              {"uid", "leased at run"},
              {"gid", "leased at run"},
              {"shared", "no: leased to this module id alone (module_users)"}};
      break;
  }
  user["umask"] = identity.umask >= 0 ? json("0077") : json("inherited");
  if (identity.process_limit != 0) {
    user["process_limit"] = std::to_string(identity.process_limit) +
                            " tasks, threads included: RLIMIT_NPROC of its own uid (the node's "
                            "pids_max), also where the leaf gets no pids.max";
  }
  return user;
}

json mounts_json(const MountPlan& mounts) {
  if (!mounts.enabled) return "the node's (no mount namespace of its own)";
  std::string devpts;
  for (const auto& [key, value] : kDevptsOptions) {
    devpts += (devpts.empty() ? "" : ",") + std::string(key) + "=" + value;
  }
  const std::string writable_options =
      mounts.writable_noexec ? "nosuid,nodev,noexec" : "nosuid,nodev";
  json out = {{"/dev/shm",
               {{"type", "tmpfs"},
                {"size_bytes", mounts.shm_size_bytes},
                {"options", shm_mount_options(mounts)}}},
              {"/proc", {{"type", "proc"}, {"options", kProcMountOptions}}},
              {"/dev/pts", {{"type", "devpts"}, {"options", devpts}}},
              {"writable_dirs", {{"paths", mounts.writable_dirs}, {"options", writable_options}}}};
  out["/tmp"] = mounts.own_tmp
                    ? json{{"type", "tmpfs"},
                           {"size_bytes", mounts.shm_size_bytes},
                           {"options", tmp_mount_options(mounts) + "," + writable_options}}
                    : json("the node's (" + mounts.tmp_kept_by + " lies at or below /tmp)");
  out["/etc/passwd"] =
      mounts.own_user_database
          ? json("its own, as /etc/group: root, nobody and its own user, oarbank-ID (root's, 0644)")
          : json("the node's (no uid of its own)");
  out["/sys"] = mounts.own_sysfs
                    ? json{{"type", "sysfs"},
                           {"options", "ro,nosuid,nodev,noexec"},
                           {"from", "its own network namespace: its own interfaces alone"}}
                    : json("the node's (no network namespace of its own)");
  out["/sys/fs/cgroup"] =
      mounts.own_cgroup
          ? json{{"type", "cgroup2"},
                 {"options", "ro,nosuid,nodev,noexec"},
                 {"from", "a cgroup namespace rooted at its leaf: its own cgroup alone"}}
          : json("not granted (no sysfs or no cgroup leaf of its own)");
  return out;
}

json network_json(const Plan& plan, const Policy& policy) {
  if (policy.net == NetMode::EgressAllowlist) {
    if (plan.own_network_namespace) {
      return "its own network namespace: loopback only, the proxy reached at proxy_listen "
             "inside it";
    }
    return "the node's (egress kept to the proxy by Landlock's port rule alone)";
  }
  if (plan.own_network_namespace) return "its own network namespace: loopback only";
  return "the node's";
}

}  // namespace

json explain_world(const Plan& plan, const Policy& policy) {
  // The filter's variant bits that come from the world, not the policy: what each allows.
  const seccomp::FilterVariant& v = plan.filter;
  json adds = json::object();
  if (v.own_namespaces) {
    adds["+own-namespaces"] =
        "SysV IPC and POSIX message queues (its own IPC namespace), netlink route and sock_diag "
        "(its own network namespace)";
  }
  if (v.own_user) {
    adds["+own-user"] =
        "prlimit64, sched_*, setpriority and ioprio_set on its own processes by pid; inotify, "
        "its watches added by the supervisor on what its uid owns (its own uid)";
  }
  if (v.own_group) {
    adds["+own-group"] =
        "setsid, setpgid, and TIOCSCTTY and TIOCSPGRP on its own pty (its cgroup leaf, no "
        "terminal handed in)";
  }
  return {
      {"user", user_json(plan.identity)},
      {"mounts", mounts_json(plan.mounts)},
      {"ipc_namespace", v.own_namespaces
                            ? "its own: SysV IPC and POSIX message queues are the module's "
                              "alone and end with it"
                            : "the node's (SysV IPC and POSIX message queues refused)"},
      {"network_namespace", network_json(plan, policy)},
      {"filter_variant_adds", adds},
  };
}

}  // namespace oarbank
