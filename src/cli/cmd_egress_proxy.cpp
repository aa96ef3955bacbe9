// egress-proxy [OPTIONS] POLICY.json: the agent's proxy as a standalone service, for a module
// that a bare sandbox-exec (or another supervisor) runs: the same code sandbox-run hosts.
// One module per process, on its own listener (the proxy always knows whose allowlist
// applies); it runs until SIGTERM or SIGINT.
#include <sys/resource.h>

#include <csignal>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/proxy_host.hpp"
#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "policy/module_id.hpp"
#include "apply/module_network.hpp"
#include "sys/error.hpp"

namespace oarbank::cli {
namespace {

constexpr const char* kCommand = "egress-proxy";

struct ProxyArgs {
  std::string policy_path;
  std::optional<std::string> config_path;
  std::string id = "module";
  std::optional<std::string> listen;
  std::optional<std::string> log_path;
};

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

}  // namespace

Runner add_egress_proxy(CLI::App& app) {
  auto options = std::make_shared<ProxyArgs>();
  auto* sub = app.add_subcommand(
      kCommand,
      "Run the agent's egress proxy for one module's policy (its egress list) on the node's "
      "proxy_listen, until SIGTERM or SIGINT: for a module started by sandbox-exec alone. "
      "sandbox-run hosts the same proxy itself.");
  // Issue 16: the whole usage line, what POLICY is, and two examples.
  sub->footer(
      "Usage:\n"
      "  oarbank-agent egress-proxy [--config FILE] [--id ID] [--listen IP:PORT] [--log FILE] "
      "POLICY.json\n"
      "  POLICY.json is a file (- reads it from standard input).\n"
      "Examples:\n"
      "  oarbank-agent egress-proxy job.json\n"
      "  oarbank-agent egress-proxy --listen 127.0.0.1:3128 --log /var/log/oarbank/fetch-1.log "
      "job.json\n");
  sub->add_option("policy", options->policy_path,
                  "The module's policy file (its egress list); - reads it from standard input")
      ->required();
  sub->add_option("--config", options->config_path,
                  "Node configuration file (default: $OARBANK_AGENT_CONFIG, else "
                  "/etc/oarbank/agent.json)");
  sub->add_option("--id", options->id, "The module's id, in the log lines (default: module)");
  sub->add_option("--listen", options->listen,
                  "IP:PORT to listen on (default: the configuration's proxy_listen)");
  sub->add_option("--log", options->log_path,
                  "Append the JSON log lines to FILE (default: stderr)");
  return [options] { return run_egress_proxy(*options); };
}

}  // namespace oarbank::cli
