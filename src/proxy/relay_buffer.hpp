// The fixed buffers a connection reads into: the request head and the client's bytes (up), the
// response head and the upstream's bytes (down). Shared by the tunnel (tunnel.hpp) and the
// HTTP forwarding (http_forward.cpp).
#pragma once

#include <cstddef>
#include <memory>

namespace oarbank::proxy {

// Bytes read at once in each direction of a relay.
inline constexpr std::size_t kRelayBufferBytes = 64 * 1024;

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
