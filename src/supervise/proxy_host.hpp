// The egress proxy hosted by a command (sandbox-run for its module, or egress-proxy alone):
// settings from the node's configuration, a log sink, and the server's thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "proxy/proxy_server.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {

// How the log reaches stderr when no log file is given (issue 16).
enum class StderrLogForm {
  Json,     // every JSON line (a pipe, the journal, egress-proxy)
  Summary,  // one line per refusal, prefixed by the command (sandbox-run on a terminal)
};

class ProxyHost {
 public:
  // Serves `policy.egress` for module `id` on `listener`. `log_path`: append the JSON lines
  // there (a regular file, reached through no symbolic link), else to stderr; `log_option`
  // names the option in messages; `stderr_form`: what stderr gets without a log file. Throws
  // Error(Config) for settings the proxy refuses, and Error(Usage) for a log file it refuses.
  // `peer_check`: admit only the connections it accepts (proxy::PeerCheck); empty: all.
  // `tap`: also given every log line, on the proxy's thread (sandbox-run's denials, issue 14).
  ProxyHost(const NodeConfig& config, const std::optional<std::string>& log_path,
            const std::string& log_option, StderrLogForm stderr_form, const std::string& id,
            const Policy& policy, UniqueFd listener, proxy::PeerCheck peer_check = {},
            std::function<void(std::string_view)> tap = {});
  ~ProxyHost();  // stops the server and joins its thread
  ProxyHost(const ProxyHost&) = delete;
  ProxyHost& operator=(const ProxyHost&) = delete;

  // Runs the server on a thread of its own (sandbox-run: after the module's child exists, so
  // that the child was cloned from a process with one thread).
  void start_thread();
  // Runs the server on this thread until stop() (egress-proxy).
  void run();
  void stop() noexcept;

 private:
  UniqueFd log_fd_;
  std::unique_ptr<proxy::ProxyServer> server_;
  std::thread thread_;
};

}  // namespace oarbank
