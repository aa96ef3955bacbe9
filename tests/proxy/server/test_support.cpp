#include "test_support.hpp"

#include <dirent.h>
#include <sys/time.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

namespace oarbank::proxy::testing {

int listen_tcp(std::uint16_t& port, int backlog) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, backlog) != 0) {
    throw std::runtime_error("listen_tcp");
  }
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  port = ntohs(address.sin_port);
  return fd;
}

static void set_timeouts(int fd) {
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

int connect_tcp(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  set_timeouts(fd);
  return fd;
}

void send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::string recv_until(int fd, std::string_view marker) {
  std::string out;
  char buf[65536];
  while (out.find(marker) == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

std::string recv_all(int fd) { return recv_until(fd, std::string_view("\0\0never\0\0", 10)); }

int count_open_fds() {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count - 1;  // the directory's own descriptor
}

std::uint16_t unused_port() {
  std::uint16_t port = 0;
  ::close(listen_tcp(port));
  return port;
}

Upstream::Upstream(std::function<void(int)> handler, int connections) {
  listener_ = listen_tcp(port);
  thread_ = std::thread([this, handler = std::move(handler), connections] {
    for (int i = 0; i < connections; ++i) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 5000) != 1) return;
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      set_timeouts(fd);
      handler(fd);
      ::close(fd);
    }
  });
}

Upstream::~Upstream() {
  ::shutdown(listener_, SHUT_RDWR);
  thread_.join();
  ::close(listener_);
}

// --- Fake DNS -----------------------------------------------------------------------------

FakeDns::FakeDns(std::map<std::string, std::vector<std::string>> table,
                 std::set<std::string> silent)
    : table_(std::move(table)), silent_(std::move(silent)) {
  fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { serve(); });
}

FakeDns::~FakeDns() {
  stop_ = true;
  thread_.join();
  ::close(fd_);
}

void FakeDns::serve() {
  unsigned char query[1500];
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) != 1) continue;
    sockaddr_storage from{};
    socklen_t from_length = sizeof from;
    const ssize_t n =
        ::recvfrom(fd_, query, sizeof query, 0, reinterpret_cast<sockaddr*>(&from), &from_length);
    if (n < 17) continue;
    ++queries;
    // The question: labels from byte 12, then QTYPE and QCLASS.
    std::size_t pos = 12;
    std::string name;
    while (pos < static_cast<std::size_t>(n) && query[pos] != 0) {
      const std::size_t len = query[pos];
      if (!name.empty()) name += '.';
      name.append(reinterpret_cast<const char*>(query + pos + 1), len);
      pos += len + 1;
    }
    pos += 1;
    if (pos + 4 > static_cast<std::size_t>(n)) continue;
    const int qtype = (query[pos] << 8) | query[pos + 1];
    const std::size_t question_end = pos + 4;
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (silent_.contains(name)) continue;
    std::vector<unsigned char> answer(query, query + question_end);
    answer[2] = 0x81;  // QR, RD
    answer[3] = 0x80;  // RA, NOERROR
    answer[6] = answer[7] = answer[8] = answer[9] = answer[10] = answer[11] = 0;
    auto it = table_.find(name);
    if (it == table_.end()) {
      answer[3] = 0x83;  // NXDOMAIN
    } else {
      int count = 0;
      for (const auto& text : it->second) {
        unsigned char bytes[16];
        const bool v6 = text.find(':') != std::string::npos;
        if ((qtype == 1 && v6) || (qtype == 28 && !v6)) continue;
        ::inet_pton(v6 ? AF_INET6 : AF_INET, text.c_str(), bytes);
        const unsigned char record[] = {0xc0, 0x0c, 0, static_cast<unsigned char>(qtype),
                                        0,    1,    0, 0,
                                        0,    60,   0, static_cast<unsigned char>(v6 ? 16 : 4)};
        answer.insert(answer.end(), record, record + sizeof record);
        answer.insert(answer.end(), bytes, bytes + (v6 ? 16 : 4));
        ++count;
      }
      answer[7] = static_cast<unsigned char>(count);
    }
    answer[5] = 1;  // QDCOUNT
    ::sendto(fd_, answer.data(), answer.size(), 0, reinterpret_cast<sockaddr*>(&from), from_length);
  }
}

// --- The proxy ----------------------------------------------------------------------------

EgressDestination ip_entry(const std::string& ip, std::uint16_t port) {
  return EgressDestination{ip, port, false, true};
}

EgressDestination name_entry(const std::string& name, std::uint16_t port) {
  return EgressDestination{name, port, false, false};
}

ProxySettings quick_settings() {
  ProxySettings s;
  s.header_read_timeout = std::chrono::milliseconds(2000);
  s.dns_timeout = std::chrono::milliseconds(1000);
  s.connect_timeout = std::chrono::milliseconds(1000);
  s.idle_timeout = std::chrono::milliseconds(5000);
  return s;
}

Proxy::Proxy(ProxySettings settings, std::vector<EgressDestination> allowlist, bool exempt_loopback,
             Relay relay) {
  settings.log = [this](std::string_view line) {
    std::lock_guard lock(mutex_);
    lines_.emplace_back(line);
  };
  TestingOnlyExemptions exemptions;
  if (exempt_loopback) exemptions.permitted_ranges.push_back(*parse_ip_range("127.0.0.0/8"));
  exemptions.relay_tunnels_by_copy = relay == Relay::Copy;
  server = std::make_unique<ProxyServer>(std::move(settings), std::move(exemptions));
  const int fd = listen_tcp(port);
  server->add_module("m1", std::move(allowlist), fd);
  thread_ = std::thread([this] { server->run(); });
}

Proxy::~Proxy() { stop(); }

void Proxy::stop() {
  if (!thread_.joinable()) return;
  server->stop();
  thread_.join();
}

std::uint16_t Proxy::add_module(const std::string& id, std::vector<EgressDestination> allowlist) {
  std::uint16_t module_port = 0;
  const int fd = listen_tcp(module_port);
  server->add_module(id, std::move(allowlist), fd);
  return module_port;
}

std::vector<nlohmann::json> Proxy::log() {
  std::lock_guard lock(mutex_);
  std::vector<nlohmann::json> out;
  for (const auto& line : lines_) out.push_back(nlohmann::json::parse(line));  // throws if not JSON
  return out;
}

std::vector<nlohmann::json> Proxy::wait_for_log(const std::string& event, std::size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (true) {
    std::vector<nlohmann::json> matching;
    for (auto& line : log()) {
      if (line["event"] == event) matching.push_back(line);
    }
    if (matching.size() >= count || std::chrono::steady_clock::now() > deadline) return matching;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int status_of(const std::string& response) {
  if (response.size() < 12 || !response.starts_with("HTTP/1.")) return 0;
  return std::stoi(response.substr(9, 3));
}

}  // namespace oarbank::proxy::testing
