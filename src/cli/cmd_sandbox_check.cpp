// sandbox-check POLICY.json: can this node run this policy? 0 yes, 70 no (one line per missing
// capability or path), 64 invalid policy, 78 invalid configuration.
#include <sys/stat.h>
#include <unistd.h>

#include <iostream>
#include <optional>

#include "apply/prepared_exec.hpp"
#include "cli/commands.hpp"
#include "config/node_config.hpp"
#include "plan/plan.hpp"
#include "plan/protected_paths.hpp"
#include "policy/paths.hpp"
#include "probe/module_user_access.hpp"
#include "probe/path_facts.hpp"
#include "probe/probe.hpp"
#include "probe/writable_path_rule.hpp"
#include "supervise/uid_registry.hpp"
#include "supervise/writable_dirs.hpp"
#include "sys/error.hpp"

namespace oarbank::cli {
namespace {

constexpr const char* kCommand = "sandbox-check";

// Every path the policy names, with its JSON Pointer (protected_paths.hpp's policy_paths names
// them by what they are instead).
std::vector<std::pair<std::string, std::string>> policy_paths_by_pointer(const Policy& policy) {
  std::vector<std::pair<std::string, std::string>> out{{"/bundle", policy.bundle}};
  for (std::size_t i = 0; i < policy.runtime.size(); ++i)
    out.emplace_back("/runtime/" + std::to_string(i), policy.runtime[i]);
  for (std::size_t i = 0; i < policy.tools.size(); ++i)
    out.emplace_back("/tools/" + std::to_string(i), policy.tools[i]);
  if (policy.work) out.emplace_back("/work", *policy.work);
  for (std::size_t i = 0; i < policy.data.size(); ++i)
    out.emplace_back("/data/" + std::to_string(i), policy.data[i]);
  if (policy.temp) out.emplace_back("/temp", *policy.temp);
  return out;
}

}  // namespace

int run_sandbox_check(const CheckArgs& options) {
  return run_guarded(kCommand, options.policy_path, [&]() -> int {
    const NodeConfig config = load_node_config(options.config_path);
    const Policy policy = load_policy_file(options.policy_path);
    // What the launcher probes for this policy (apply/prepared_exec.cpp), so both agree.
    const KernelFeatures features = probe_kernel(config, launch_probe_scope(policy, config));
    int missing = 0;
    for (const auto& verdict : unmet_capabilities(policy, features, config)) {
      print_error(kCommand, std::string("cannot enforce \"") + std::string(row_key(verdict.row)) +
                                "\" (" + std::string(row_title(verdict.row)) +
                                "): " + verdict.reason);
      ++missing;
    }
    OpenedPaths paths;
    // The launcher's directory rule (issue 10), one line per writable path it refuses, for
    // the module user the launcher would run as if started as this user.
    uid_t module_uid = features.running_as_root ? config.module_uid : ::geteuid();
    gid_t module_gid = features.running_as_root ? config.module_gid : ::getegid();
    // Issue 12: under sandbox-run as root the id's leased uid is the module user; read from
    // the registry, never made here (an id without a lease yet owns nothing).
    std::string owner = "the module user (uid " + std::to_string(module_uid) + ")";
    if (features.running_as_root && config.module_users) {
      owner = "the module id's own user (a uid of module_users " +
              std::to_string(config.module_users->first) + "-" +
              std::to_string(config.module_users->last) + ")";
      if (options.id) {
        for (const auto& lease : list_module_users(user_registry_dir())) {
          if (lease.id != *options.id) continue;
          module_uid = lease.uid;
          module_gid = lease.gid;
          owner = "the module id's own user (uid " + std::to_string(lease.uid) + ")";
          // As sandbox-run refuses it (uid_registry.hpp): a number given to another user since.
          if (auto conflict = leased_uid_conflict(lease.uid); !conflict.empty()) {
            print_error(kCommand, "module id " + lease.id + " holds uid " +
                                      std::to_string(lease.uid) + " (module_users), which is now " +
                                      conflict + ": sandbox-run refuses to run it");
            ++missing;
          }
        }
      }
    }
    for (const auto& path : writable_paths(policy)) {
      try {
        paths.open_writable({path}, module_uid);
      } catch (const Error& e) {
        print_error(kCommand, e.what());
        ++missing;
      }
    }
    // The launcher's identity step (apply/launch.cpp): the module user reads, writes and
    // searches work and temp, reads and searches data; a directory it cannot is 70 there, so
    // here too (session 16's review: root's 0755 work was "can run"). Asked as that user.
    for (const auto& [path, role] : writable_dirs_of(policy)) {
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) continue;  // missing: judged below
      const int mode = writable_access_mode(role, S_ISDIR(st.st_mode));
      if (const int err = module_user_access_error(path, mode, module_uid, module_gid); err != 0) {
        print_error(kCommand,
                    writable_access_problem(role, path, PathOwnership{st.st_uid, st.st_mode},
                                            module_uid, err));
        ++missing;
      }
    }
    // sandbox-run makes a missing work, data or temp directory below the node's
    // writable_roots (supervise/writable_dirs.hpp): the check agrees, and says so.
    std::vector<std::string> will_be_created;
    std::string root_list;
    for (const auto& root : config.writable_roots) {
      root_list += (root_list.empty() ? "" : ", ") + root;
    }
    for (const auto& [pointer, path] : policy_paths_by_pointer(policy)) {
      if (paths.kind(path) != PathKind::Missing) {
        // As the launch refuses it: a link leading to / or a kernel tree (plan/plan.cpp).
        if (std::string problem =
                forbidden_destination_problem(pointer, path, paths.canonical(path));
            !problem.empty()) {
          print_error(kCommand, problem);
          ++missing;
        }
        continue;
      }
      const bool writable_path =
          pointer == "/work" || pointer == "/temp" || pointer.starts_with("/data/");
      if (writable_path) {
        if (auto root = writable_root_for(path, config.writable_roots)) {
          will_be_created.push_back("policy " + pointer + ": " + path +
                                    " will be created by sandbox-run (below the writable root " +
                                    *root + "), owned by " + owner +
                                    "; a bare sandbox-exec needs it made first");
          continue;
        }
        print_error(kCommand, "policy " + pointer + ": " + path +
                                  " does not exist on this node, and sandbox-run creates missing "
                                  "directories only below the node's writable_roots (" +
                                  root_list + ")");
      } else {
        print_error(kCommand, "policy " + pointer + ": " + path + " does not exist on this node");
      }
      ++missing;
    }
    // What the plan itself refuses (rules nested so that they would give more than --explain
    // says: a work directory under /opt without exec_writable; session 16's review), asked of
    // the plan the launcher would make. Only where every path is there (a missing one is
    // made by sandbox-run first, and named above).
    if (missing == 0 && will_be_created.empty()) {
      NodeConfig module_config = config;
      module_config.module_uid = module_uid;
      module_config.module_gid = module_gid;
      try {
        (void)make_plan(policy, features, module_config, paths, LaunchRequest{});
      } catch (const Error& e) {
        print_error(kCommand, e.what());
        ++missing;
      }
    }
    if (missing > 0) return exit_code_for(ErrorKind::Unenforceable);
    for (const auto& line : will_be_created) std::cout << line << '\n';
    std::cout << "this node can run "
              << (options.policy_path == "-" ? std::string("(standard input)")
                                             : options.policy_path)
              << '\n';
    return 0;
  });
}

}  // namespace oarbank::cli
