#include "cli/proxy_host.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <stdexcept>

#include "sys/error.hpp"
#include "sys/safe_open.hpp"

namespace oarbank::cli {

ProxyHost::ProxyHost(const NodeConfig& config, const std::optional<std::string>& log_path,
                     const std::string& log_option, const std::string& id, const Policy& policy,
                     UniqueFd listener) {
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
  settings.log = [fd](std::string_view line) {
    std::string text(line);
    text += '\n';
    [[maybe_unused]] auto n = ::write(fd, text.data(), text.size());
  };
  try {
    server_ = std::make_unique<proxy::ProxyServer>(std::move(settings));
    server_->add_module(id, policy.egress, listener.release());
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorKind::Config, std::string("egress proxy: ") + e.what());
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

}  // namespace oarbank::cli
