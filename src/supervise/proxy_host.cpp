#include "supervise/proxy_host.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <system_error>

#include "plan/launch_steps.hpp"
#include "proxy/proxy_summary.hpp"
#include "supervise/operator_lines.hpp"
#include "sys/error.hpp"
#include "sys/safe_open.hpp"

namespace oarbank {

ProxyHost::ProxyHost(const NodeConfig& config, const std::optional<std::string>& log_path,
                     const std::string& log_option, StderrLogForm stderr_form,
                     const std::string& id, const Policy& policy, UniqueFd listener,
                     proxy::PeerCheck peer_check, std::function<void(std::string_view)> tap) {
  if (log_path) {
    // Through no symbolic link, a regular file only (sys/safe_open.hpp): root appends to it.
    OperatorFile file = open_operator_file(*log_path, true, 0640);
    if (!file.fd.valid()) throw Error(ErrorKind::Usage, log_option + " " + file.problem);
    log_fd_ = std::move(file.fd);
  }
  proxy::ProxySettings settings;
  settings.dns_servers = config.proxy_dns_servers;
  settings.allow_private_ranges = config.proxy_allow_private_ranges;
  settings.max_tunnels_per_module = config.proxy_max_tunnels_per_module;
  settings.max_tunnels_total = config.proxy_max_tunnels_total;
  const int fd = log_fd_.valid() ? log_fd_.get() : STDERR_FILENO;
  // One write(2) per line: lines from the proxy never interleave with others' in the file.
  if (!log_fd_.valid() && stderr_form == StderrLogForm::Summary) {
    // Not print_error: that one records the last line for the main thread, and this runs on
    // the proxy's. One write(2) per line, as for the JSON lines.
    auto first = std::make_shared<std::atomic<bool>>(true);
    settings.log = [first, tap = std::move(tap)](std::string_view line) {
      if (tap) tap(line);
      if (auto summary = proxy::proxy_refusal_summary(line, first->load())) {
        first->store(false);
        // After the module's output, a reset first (operator_lines.hpp).
        const std::string text =
            operator_line_prefix() + "oarbank-agent sandbox-run: " + *summary + "\n";
        [[maybe_unused]] auto n = ::write(STDERR_FILENO, text.data(), text.size());
      }
    };
  } else {
    settings.log = [fd, tap = std::move(tap)](std::string_view line) {
      if (tap) tap(line);
      std::string text(line);
      text += '\n';
      [[maybe_unused]] auto n = ::write(fd, text.data(), text.size());
    };
  }
  try {
    server_ = std::make_unique<proxy::ProxyServer>(std::move(settings));
    server_->add_module(id, policy.egress, listener.release(), std::move(peer_check));
  } catch (const std::invalid_argument& e) {
    // The proxy library answers in standard exceptions (its own tests name them); here, at
    // its edge, they become the project's Error (sys/error.hpp): invalid settings are the
    // node's configuration, anything else is the proxy step failing (fail closed).
    throw Error(ErrorKind::Config, std::string("egress proxy: ") + e.what());
  } catch (const std::system_error& e) {
    const int err = e.code().category() == std::generic_category() ? e.code().value() : 0;
    throw Error(ErrorKind::StepFailed, LaunchStep::Proxy, std::string(),
                step_failed_message(LaunchStep::Proxy, std::string("egress proxy: ") + e.what()),
                err);
  } catch (const std::runtime_error& e) {
    throw step_error(LaunchStep::Proxy, std::string("egress proxy: ") + e.what());
  }
}

ProxyHost::~ProxyHost() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void ProxyHost::start_thread() {
  thread_ = std::thread([this] { server_->run(); });
}

void ProxyHost::run() { server_->run(); }

void ProxyHost::stop() noexcept {
  if (server_) server_->stop();
}

}  // namespace oarbank
