#include "apply/prepared_exec.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "apply/descriptors.hpp"
#include "plan/protected_paths.hpp"
#include "probe/probe.hpp"
#include "sys/error.hpp"

namespace oarbank {

LaunchRequest make_launch_request(const std::vector<std::string>& argv,
                                  const std::vector<std::string>& setenv,
                                  const std::vector<int>& keep_fds) {
  LaunchRequest request;
  request.argv = argv;
  for (const auto& entry : setenv) {
    auto eq = entry.find('=');
    if (eq == 0 || entry.empty() || entry.find('\n') != std::string::npos) {
      throw Error(ErrorKind::Usage, "--setenv " + entry + ": expected NAME=VALUE or NAME");
    }
    if (eq == std::string::npos) {
      // NAME alone: the value is this process's own (as systemd-run's --setenv=NAME and
      // docker's -e NAME). Attack review: a NAME=VALUE in the command line is in
      // /proc/PID/cmdline, which every user of the node may read; the environment is not.
      const char* value = std::getenv(entry.c_str());
      if (value != nullptr && std::string_view(value).find('\n') != std::string_view::npos) {
        throw Error(ErrorKind::Usage, "--setenv " + entry +
                                          ": its value in this process's environment holds a "
                                          "newline, which --setenv refuses");
      }
      if (value == nullptr) {
        throw Error(ErrorKind::Usage,
                    "--setenv " + entry +
                        ": not set in this process's environment (--setenv NAME takes the "
                        "value from there; --setenv NAME=VALUE gives it)");
      }
      request.setenv.emplace_back(entry, value);
      continue;
    }
    request.setenv.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
  }
  for (int fd : keep_fds) {
    if (fd < 3)
      throw Error(ErrorKind::Usage,
                  "--keep-fd " + std::to_string(fd) + ": 0, 1 and 2 are always kept");
    if (!descriptor_is_open(fd))
      throw Error(ErrorKind::Usage, "--keep-fd " + std::to_string(fd) + ": not an open descriptor");
    request.keep_fds.push_back(fd);
  }
  return request;
}

ProbeScope launch_probe_scope(const Policy& policy, const NodeConfig& config) {
  // The limit rows (rows_needed_by) depend on the cgroup only under the node's hard_limits;
  // the egress row on whether this process can make network namespaces.
  return ProbeScope{.gpu_devices = policy.gpu == GpuMode::Compute,
                    .cgroup = config.hard_limits,
                    .network_namespaces = policy.net == NetMode::EgressAllowlist,
                    .denial_facts = false};
}

std::unique_ptr<PreparedExec> prepare_exec(const LaunchRequest& request, const NodeConfig& config,
                                           const Policy& policy, bool explain_only) {
  return prepare_exec(request, config, policy,
                      probe_kernel(config, launch_probe_scope(policy, config)), explain_only);
}

std::unique_ptr<PreparedExec> prepare_exec(const LaunchRequest& request, const NodeConfig& config,
                                           const Policy& policy, KernelFeatures features,
                                           bool explain_only) {
  auto prepared = std::make_unique<PreparedExec>();
  prepared->config = config;
  prepared->policy = policy;
  prepared->features = std::move(features);
  // Issue 10: the writable paths are opened (through no symbolic link) and judged before the
  // plan looks at any path. The module user: the configured one for a launcher started as
  // root, else the caller itself.
  prepared->paths.open_writable(
      writable_paths(policy), prepared->features.running_as_root ? config.module_uid : ::geteuid());
  prepared->paths.open_system_directories(base_read_execute_paths());
  prepared->plan =
      make_plan(prepared->policy, prepared->features, prepared->config, prepared->paths, request);
  if (!explain_only) {
    prepared->launch = prepare_launch(prepared->plan, prepared->policy, prepared->paths);
  }
  return prepared;
}

}  // namespace oarbank
