// The Resolver on c-ares, driven by the proxy's Asio event loop (no thread, no blocking
// getaddrinfo: the agent is linked statically, where glibc's NSS does not work, and the
// node's configuration can name the DNS servers).
//
// Names are resolved as given: no search domains, no HOSTALIASES, A and AAAA together.
#pragma once

#include <ares.h>

#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proxy/resolver.hpp"

namespace oarbank::proxy {

class CaresResolver final : public Resolver {
 public:
  // `servers`: see ProxySettings::dns_servers. Throws std::invalid_argument on a malformed
  // server and std::runtime_error when c-ares cannot start.
  CaresResolver(asio::io_context& io, const std::vector<std::string>& servers,
                std::chrono::milliseconds timeout);
  ~CaresResolver() override;
  CaresResolver(const CaresResolver&) = delete;
  CaresResolver& operator=(const CaresResolver&) = delete;

  void resolve(const std::string& name, Callback done) override;

  // Ends every pending resolution (their callbacks get Failed) and closes c-ares' sockets.
  // resolve() after it answers Failed at once.
  void shutdown() override;

 private:
  struct Query;
  struct Watch {
    std::unique_ptr<asio::posix::stream_descriptor> descriptor;
    bool want_read = false;
    bool want_write = false;
    bool read_armed = false;
    bool write_armed = false;
    std::uint64_t generation = 0;
  };

  static void on_socket_state(void* self, ares_socket_t fd, int readable, int writable);
  static void on_answer(void* arg, int status, int timeouts, struct ares_addrinfo* result);
  void socket_state(int fd, bool readable, bool writable);
  void arm(int fd, bool write);
  void process(int read_fd, int write_fd);
  void schedule_timeout();
  void finish(Query& query, ResolveResult result);

  asio::io_context& io_;
  std::chrono::milliseconds timeout_;
  ares_channel channel_ = nullptr;
  std::map<int, Watch> watches_;
  std::map<std::uint64_t, std::unique_ptr<Query>> queries_;
  std::uint64_t next_query_ = 1;
  std::uint64_t next_generation_ = 1;
  asio::steady_timer ares_timer_;
};

}  // namespace oarbank::proxy
