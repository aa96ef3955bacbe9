#include "plan/plan.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "plan/landlock_rights.hpp"
#include "plan/mechanism.hpp"
#include "policy/paths.hpp"
#include "sys/error.hpp"
#include "sys/landlock_abi.hpp"

namespace oarbank {

std::vector<Plan::WritablePath> writable_dirs_of(const Policy& policy) {
  std::vector<Plan::WritablePath> dirs;
  if (policy.work) dirs.push_back({*policy.work, "work"});
  for (const auto& path : policy.data) dirs.push_back({path, "data"});
  if (policy.temp) dirs.push_back({*policy.temp, "temp"});
  return dirs;
}

const std::vector<std::string>& base_read_execute_paths() {
  static const std::vector<std::string> kPaths = {
      "/usr",  "/lib", "/lib32", "/lib64", "/bin",
      "/sbin", "/etc", "/opt",   "/proc",  "/sys/devices/system/cpu"};
  return kPaths;
}

const std::vector<std::string>& base_device_paths() {
  static const std::vector<std::string> kPaths = {"/dev/null", "/dev/zero", "/dev/random",
                                                  "/dev/urandom", "/dev/full"};
  return kPaths;
}

std::vector<CapabilityVerdict> unmet_capabilities(const Policy& policy,
                                                  const KernelFeatures& features,
                                                  const NodeConfig& config) {
  std::vector<CapabilityVerdict> unmet;
  for (auto row : rows_needed_by(policy, config)) {
    auto verdict = evaluate_capability(row, features, config);
    if (!row_is_met(verdict.status)) unmet.push_back(std::move(verdict));
  }
  return unmet;
}

namespace {

class RuleBuilder {
 public:
  RuleBuilder(const PathOracle& paths, LandlockPlan& plan) : paths_(paths), plan_(plan) {}

  // A path the policy names: it must exist on this node.
  void required(const std::string& pointer, const std::string& path, std::uint64_t access,
                const std::string& why) {
    PathKind kind = paths_.kind(path);
    if (kind == PathKind::Missing) {
      throw Error(ErrorKind::Unenforceable,
                  fmt::format("policy {}: {} does not exist on this node", pointer, path));
    }
    // The parser refused these paths as written; a link on this node can lead there too (the
    // module's own bundle may hold `rootlink -> /`): Landlock's rule is on the inode it leads to.
    if (std::string problem = forbidden_destination_problem(pointer, path, paths_.canonical(path));
        !problem.empty()) {
      throw Error(ErrorKind::Unenforceable, problem);
    }
    add(path, kind, access, why);
  }

  // A base-system path: some do not exist on every distribution (/lib32, /opt).
  void optional(const std::string& path, std::uint64_t access, const std::string& why) {
    PathKind kind = paths_.kind(path);
    if (kind != PathKind::Missing) add(path, kind, access, why);
  }

 private:
  void add(const std::string& path, PathKind kind, std::uint64_t access, const std::string& why) {
    const bool dir = kind == PathKind::Directory;
    access &= plan_.handled_fs;
    // The kernel refuses directory rights (read_dir, make_*, remove_*, refer) on a file.
    if (!dir) access &= landlock::file_rights();
    plan_.path_rules.push_back(LandlockPathRule{path, paths_.canonical(path), access, dir, why});
  }

  const PathOracle& paths_;
  LandlockPlan& plan_;
};

bool beneath_or_equal(const std::string& inner, const std::string& outer) {
  if (outer == "/") return true;
  return inner == outer ||
         (inner.size() > outer.size() && inner.starts_with(outer) && inner[outer.size()] == '/');
}

// Landlock's rights add up down the tree: a file gets the rights of every rule above it. So a
// writable directory beneath a read-and-execute rule would be executable, and a read-only path
// beneath a writable one writable, whatever --explain says of each rule. Refuse such a plan.
void refuse_overlapping_rules(const LandlockPlan& plan, bool exec_writable,
                              std::size_t writable_begin, std::size_t writable_end) {
  for (std::size_t w = writable_begin; w < writable_end; ++w) {
    const auto& writable = plan.path_rules[w];
    for (std::size_t r = 0; r < plan.path_rules.size(); ++r) {
      if (r >= writable_begin && r < writable_end) continue;
      const auto& other = plan.path_rules[r];
      if (!other.is_directory && !writable.is_directory) continue;
      if ((other.access & LANDLOCK_ACCESS_FS_EXECUTE) != 0 && !exec_writable &&
          beneath_or_equal(writable.canonical, other.canonical)) {
        throw Error(ErrorKind::Unenforceable,
                    fmt::format("{} ({}) lies within {} ({}): execute would reach it, which "
                                "exec_writable false refuses; choose a directory outside it",
                                writable.path, writable.why, other.path, other.why));
      }
      if (other.is_directory && beneath_or_equal(other.canonical, writable.canonical) &&
          (other.access & LANDLOCK_ACCESS_FS_WRITE_FILE) == 0) {
        throw Error(ErrorKind::Unenforceable,
                    fmt::format("{} ({}) lies within {} ({}): it would be writable; choose paths "
                                "that do not nest",
                                other.path, other.why, writable.path, writable.why));
      }
    }
  }
}

}  // namespace

std::optional<std::string> earlier_writable_problem(const LandlockPlan& plan,
                                                    const std::vector<std::string>& earlier) {
  for (const auto& rule : plan.path_rules) {
    if ((rule.access & LANDLOCK_ACCESS_FS_EXECUTE) == 0) continue;
    for (const auto& written : earlier) {
      for (const std::string* form : {&rule.path, &rule.canonical}) {
        if (form->empty()) continue;
        const bool contains = beneath_or_equal(written, *form);
        if (!contains && !beneath_or_equal(*form, written)) continue;
        return fmt::format(
            "{} ({}) {} {}, which this module id was given to write in an earlier run: what it "
            "wrote there would run as code, which exec_writable false refuses; choose a "
            "directory it was never given to write (sandbox-ctl leases lists them)",
            rule.path, rule.why, contains ? "contains" : "lies within", written);
      }
    }
  }
  return std::nullopt;
}

namespace {

// Proxy variables: clients read them in any case (Python: No_Proxy), so compare so.
bool withheld_proxy_variable(const std::string& name) {
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return lower == "no_proxy" || lower == "all_proxy" || lower == "http_proxy" ||
         lower == "https_proxy" || lower == "ftp_proxy" || lower == "oarbank_broker";
}

bool sandbox_sets(const std::vector<std::string>& environment, const std::string& name) {
  return std::any_of(environment.begin(), environment.end(),
                     [&](const std::string& entry) { return entry.starts_with(name + "="); });
}

// HOME unless --setenv gives one.
std::string default_home(const Policy& policy) {
  return policy.work ? *policy.work : policy.temp ? *policy.temp : "/nonexistent";
}

}  // namespace

std::string module_home(const Policy& policy, const LaunchRequest& request) {
  // The last --setenv HOME, as the environment keeps it.
  for (auto it = request.setenv.rbegin(); it != request.setenv.rend(); ++it) {
    if (it->first == "HOME") return it->second;
  }
  return default_home(policy);
}

std::vector<std::string> module_environment(const Policy& policy, const NodeConfig& config,
                                            const LaunchRequest& request) {
  // A clean environment, as systemd gives services: the caller's may hold secrets.
  std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"};
  env.push_back("HOME=" + default_home(policy));
  if (policy.temp) env.push_back("TMPDIR=" + *policy.temp);
  // The mechanisms' variables (the network's: the proxy's address under egress-allowlist).
  for (const Mechanism* mechanism : mechanisms()) {
    if (mechanism->environment != nullptr) mechanism->environment(policy, config, env);
  }
  if (policy.broker) env.push_back("OARBANK_BROKER=" + config.broker_socket);
  const std::size_t sandbox_count = env.size();
  for (const auto& [name, value] : request.setenv) {
    if (name == "PATH" || name == "LANG" || name == "HOME") {
      // The caller may choose these; replace the default.
      // The prefix, not the structured binding, in the lambda: clang (14, clang-tidy's) does not
      // capture bindings, which C++20 allows.
      const std::string prefix = name + "=";
      std::erase_if(env, [&prefix](const std::string& e) { return e.starts_with(prefix); });
    } else if (sandbox_sets({env.begin(), env.begin() + static_cast<std::ptrdiff_t>(sandbox_count)},
                            name) ||
               withheld_proxy_variable(name)) {
      throw Error(
          ErrorKind::Usage,
          fmt::format("--setenv {}: the sandbox sets or withholds this variable itself", name));
    }
    env.push_back(name + "=" + value);
  }
  return env;
}

Plan make_plan(const Policy& policy, const KernelFeatures& features, const NodeConfig& config,
               const PathOracle& paths, const LaunchRequest& request) {
  if (auto unmet = unmet_capabilities(policy, features, config); !unmet.empty()) {
    const auto& first = unmet.front();
    throw Error(ErrorKind::Unenforceable,
                fmt::format("this node cannot enforce \"{}\" ({}), which the policy needs: {}",
                            row_key(first.row), row_title(first.row), first.reason));
  }

  Plan plan;
  for (auto row : rows_needed_by(policy, config))
    plan.relies_on.push_back(evaluate_capability(row, features, config));

  LandlockPlan& ll = plan.landlock;
  ll.abi = effective_landlock_abi(features, config);
  ll.handled_fs = landlock::fs_rights_for_abi(ll.abi);
  ll.handled_net = landlock::net_rights_for_abi(ll.abi);
  ll.scoped = landlock::scopes_for_abi(ll.abi);

  const std::uint64_t read_exec = landlock::read_execute_rights();
  std::uint64_t writable = ll.handled_fs;
  if (!policy.exec_writable) writable &= ~static_cast<std::uint64_t>(LANDLOCK_ACCESS_FS_EXECUTE);

  RuleBuilder rules(paths, ll);
  rules.required("/bundle", policy.bundle, read_exec, "bundle: read and execute");
  for (std::size_t i = 0; i < policy.runtime.size(); ++i) {
    rules.required(fmt::format("/runtime/{}", i), policy.runtime[i], read_exec,
                   "runtime: read and execute");
  }
  for (std::size_t i = 0; i < policy.tools.size(); ++i) {
    rules.required(fmt::format("/tools/{}", i), policy.tools[i], read_exec,
                   "tools: read and execute");
  }
  const std::size_t writable_begin = ll.path_rules.size();
  const std::string writable_why =
      policy.exec_writable ? "every file right (exec_writable)" : "every file right but execute";
  if (policy.work) rules.required("/work", *policy.work, writable, "work: " + writable_why);
  for (std::size_t i = 0; i < policy.data.size(); ++i) {
    rules.required(fmt::format("/data/{}", i), policy.data[i], writable, "data: " + writable_why);
  }
  if (policy.temp) rules.required("/temp", *policy.temp, writable, "temp: " + writable_why);
  plan.writable_dirs = writable_dirs_of(policy);
  const std::size_t writable_end = ll.path_rules.size();
  for (const auto& path : base_read_execute_paths()) {
    rules.optional(path, read_exec, "base system: read and execute");
  }
  for (const auto& path : base_device_paths()) {
    rules.optional(path, landlock::device_rw_rights(), "base system: read and write");
  }
  if (policy.gpu == GpuMode::Compute) {
    // Device ioctls are governed from ABI 5 (Linux 6.10); GPU compute needs them.
    const std::uint64_t gpu =
        landlock::device_rw_rights() | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_IOCTL_DEV;
    for (const auto& node : features.gpu_device_nodes) {
      rules.optional(node, gpu, "devices.gpu compute: read, write and device ioctls");
    }
  }

  if (request.own_mounts) {
    // The module's own /dev/shm and devpts are mounted over these paths in its mount
    // namespace (apply/module_mounts.cpp). Landlock's rules are taken on the node's
    // directories here, and a file beneath a mount point is reached through it (Landlock
    // walks up across mount points): the grant covers the module's tmpfs and devpts, and the
    // node's own instances are hidden beneath them. Without the mounts neither is granted:
    // the node's /dev/shm and ptys are shared by everyone.
    const std::uint64_t shm = writable & ~static_cast<std::uint64_t>(LANDLOCK_ACCESS_FS_EXECUTE |
                                                                     LANDLOCK_ACCESS_FS_IOCTL_DEV);
    rules.optional("/dev/shm", shm, "the module's own /dev/shm: every file right but execute");
    // Device ioctls (Landlock ABI 5) on the pty: TIOCGPTN, TIOCSPTLCK, termios.
    const std::uint64_t pty = landlock::device_rw_rights() | LANDLOCK_ACCESS_FS_IOCTL_DEV;
    rules.optional("/dev/ptmx", pty, "the module's own devpts: read, write and device ioctls");
    rules.optional("/dev/pts", pty | LANDLOCK_ACCESS_FS_READ_DIR,
                   "the module's own devpts: read, write and device ioctls");
  }
  // Its own cgroup, read-only, on its own sysfs (MountPlan::own_cgroup). Taken again on the
  // module's mount (apply/module_mounts.cpp); the rule the node's /sys/fs/cgroup gets here is
  // reached by no path of the module's (its /sys is its own sysfs, mounted over the node's).
  plan.filter = seccomp::variant_for(policy, request.world);
  plan.own_network_namespace = own_network_namespace(policy, features, config, plan.filter);
  const bool own_cgroup = request.own_mounts && request.in_leaf && plan.own_network_namespace;
  if (own_cgroup) {
    rules.optional("/sys/fs/cgroup", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR,
                   "its own cgroup (a cgroup namespace rooted at its leaf): read only");
  }

  if (request.own_terminal) {
    // /dev/tty is the opener's controlling terminal: under sandbox-run the pty made for the
    // module, or none (ENXIO). Read, write and its termios. Opening it checks /dev/tty's own
    // permissions (0666), whoever owns the pty's slave.
    rules.optional("/dev/tty", landlock::device_rw_rights() | LANDLOCK_ACCESS_FS_IOCTL_DEV,
                   "the module's controlling terminal: sandbox-run's pty of its own, never the "
                   "operator's");
  }

  refuse_overlapping_rules(ll, policy.exec_writable, writable_begin, writable_end);

  // Each mechanism's section (plan/mechanisms.cpp): the network's port rule.
  const MechanismInput input{policy, features, config};
  for (const Mechanism* mechanism : mechanisms()) {
    if (mechanism->plan_section != nullptr) mechanism->plan_section(input, plan);
  }

  if (features.running_as_root) {
    plan.identity = IdentityPlan{true, config.module_uid, config.module_gid};
    plan.identity.source = request.user_source;
    // A uid of its own (with or without the rest of its world): its new files and directories
    // are its alone (0600, 0700), so no other module's user can read or list them
    // (IdentityPlan::umask). The shared module_user keeps the caller's umask.
    if (request.user_source == ModuleUserSource::Own ||
        request.user_source == ModuleUserSource::OwnLeasedAtRun) {
      plan.identity.umask = 077;
      if (config.pids_max) {
        plan.identity.process_limit = *config.pids_max + (request.leaf_pids_limit ? 1 : 0);
      }
    }
  }
  if (request.own_mounts) {
    std::vector<std::string> dirs;
    for (const auto& dir : plan.writable_dirs) dirs.push_back(dir.path);
    // /dev/shm belongs to the user the module runs as.
    plan.mounts =
        make_mount_plan(policy, config, plan.identity.uid, plan.identity.gid, std::move(dirs));
    plan.mounts.own_sysfs = plan.own_network_namespace;
    plan.mounts.own_cgroup = own_cgroup;
    plan.mounts.own_user_database = request.user_source == ModuleUserSource::Own ||
                                    request.user_source == ModuleUserSource::OwnLeasedAtRun;
    // Nothing the module is given may lie below the tmpfs: no path of its rules, and not the
    // broker's socket (connect is not Landlock's to govern, so it has no rule).
    const auto below_tmp =
        std::find_if(ll.path_rules.begin(), ll.path_rules.end(), [](const LandlockPathRule& rule) {
          return is_at_or_below_tmp(rule.path) || is_at_or_below_tmp(rule.canonical);
        });
    if (below_tmp != ll.path_rules.end()) {
      plan.mounts.tmp_kept_by = below_tmp->path;
    } else if (policy.broker && is_at_or_below_tmp(config.broker_socket)) {
      plan.mounts.tmp_kept_by = config.broker_socket;
    }
    plan.mounts.own_tmp = plan.mounts.tmp_kept_by.empty();
    plan.mounts.tmp_rights = writable & ~static_cast<std::uint64_t>(LANDLOCK_ACCESS_FS_IOCTL_DEV);
  }
  plan.environment = module_environment(policy, config, request);
  plan.argv = request.argv;
  plan.keep_fds = request.keep_fds;
  return plan;
}

}  // namespace oarbank
