// egress-proxy [OPTIONS] POLICY.json: the agent's proxy as a standalone service, for a module
// that a bare sandbox-exec (or another supervisor) runs: the same code sandbox-run hosts.
// One module per process, on its own listener (the proxy always knows whose allowlist
// applies); it runs until SIGTERM or SIGINT.
#include <sys/resource.h>

#include <csignal>
#include <nlohmann/json.hpp>

#include "apply/module_network.hpp"
#include "cli/commands.hpp"
#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "policy/module_id.hpp"
#include "supervise/proxy_host.hpp"
#include "sys/error.hpp"

namespace oarbank::cli {
namespace {

constexpr const char* kCommand = "egress-proxy";

ProxyHost* g_host = nullptr;

// Each tunnel holds two sockets, and two pipes while it carries bytes
// (src/proxy/splice_pipe.hpp): the default soft limit of 1024 descriptors would stop the
// proxy well short of its tunnel limits. The proxy waits with epoll, never select, so the
// hard limit is safe to take; this service starts no modules that would inherit it.
void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

extern "C" void stop_on_signal(int /*sig*/) {
  if (g_host != nullptr) g_host->stop();  // one write(2) to an eventfd: async-signal-safe
}

}  // namespace

int run_egress_proxy(const ProxyArgs& options) {
  return run_guarded(kCommand, options.policy_path, [&]() -> int {
    if (auto problem = module_id_problem(options.id)) {
      throw Error(ErrorKind::Usage, "--id " + options.id + ": " + *problem);
    }
    NodeConfig config = load_node_config(options.config_path);
    if (options.listen) {
      // The same syntax and checks as the configuration's proxy_listen.
      nlohmann::json override_doc{{"proxy_listen", *options.listen}};
      NodeConfig parsed = parse_node_config(override_doc.dump(), "--listen");
      config.proxy_host = parsed.proxy_host;
      config.proxy_port = parsed.proxy_port;
    }
    const Policy policy = load_policy_file(options.policy_path);
    if (policy.net != NetMode::EgressAllowlist) {
      throw Error(ErrorKind::Usage, "the policy's net is not egress-allowlist: nothing to proxy");
    }
    raise_descriptor_limit();
    ProxyHost host(config, options.log_path, "--log", StderrLogForm::Json, options.id, policy,
                   listen_on(config.proxy_host, config.proxy_port));
    g_host = &host;
    struct sigaction action {};
    action.sa_handler = stop_on_signal;
    ::sigaction(SIGTERM, &action, nullptr);
    ::sigaction(SIGINT, &action, nullptr);
    host.run();
    g_host = nullptr;
    return 0;
  });
}

}  // namespace oarbank::cli
