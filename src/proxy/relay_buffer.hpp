// The fixed buffers a connection reads into: the request head and the client's bytes (up), the
// response head and the upstream's bytes (down). Shared by the tunnel (tunnel.hpp) and the
// HTTP forwarding (http_forward.cpp).
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <memory>

namespace oarbank::proxy {

// Bytes read at once in each direction of a relay.
inline constexpr std::size_t kRelayBufferBytes = 64 * 1024;

// Attack review (session 15): the kernel's buffers of the proxy's own sockets (the client's,
// accepted, and the upstream's) are the proxy's, charged to sandbox-run's cgroup and not the
// module's, and TCP autotuning grows each to tcp_rmem/tcp_wmem's maximum (32 MiB on the build
// machine). A module that opened 16 tunnels to an upstream sending fast and read nothing held
// about 440 MiB of the node's TCP memory (tcp_mem's pressure is node-wide: every socket of the
// node is throttled). Fixed sizes turn autotuning off (SO_RCVBUF/SO_SNDBUF lock them; the kernel
// doubles the value for its bookkeeping): at most about 4 MiB a tunnel, 512 MiB at the default
// 128 tunnels a module. The price is a window of about 512 KiB to the upstream (some 20 MB/s a
// tunnel at 25 ms of round trip), and more wake-ups a byte: 256 KiB cost twice the proxy's CPU
// a GiB relayed over veth, 512 KiB 1.4 times (docs/proxy.md, "Memory").
inline constexpr int kSocketBufferBytes = 512 * 1024;

// Set before connect (the upstream) or at accept (the client): the window scale is chosen at
// the handshake, and an accepted socket has the listener's until set. Best effort: a failure
// leaves the kernel's autotuning, as before.
inline void bound_socket_buffers(int fd) {
  const int bytes = kSocketBufferBytes;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
}

// A relay buffer that is not zero-filled: its pages become resident only as bytes arrive, so an
// idle tunnel holds little memory (a std::vector's resize would touch all 64 KiB at once).
class RelayBuffer {
 public:
  void resize(std::size_t size) {
    if (size == size_) return;
    data_.reset(new char[size]);
    size_ = size;
  }
  // Gives the memory back (a CONNECT tunnel relayed by splice needs no buffer after its head).
  void release() {
    data_.reset();
    size_ = 0;
  }
  [[nodiscard]] char* data() { return data_.get(); }
  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
};

}  // namespace oarbank::proxy
