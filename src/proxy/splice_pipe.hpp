// One direction of a CONNECT tunnel relayed inside the kernel: splice(2) moves the bytes from
// the source socket into a pipe and from the pipe into the destination socket, so they are
// never copied to user space. On this host that halves the proxy's CPU per byte relayed
// against read/write through a buffer (docs/performance.md, "Egress proxy").
#pragma once

#include <cstddef>
#include <cstdint>

#include "sys/unique_fd.hpp"

namespace oarbank::proxy {

// What one splice(2) call did: bytes moved, 0 at the source's end of stream, or an errno.
struct SpliceStep {
  std::size_t bytes = 0;
  bool end_of_stream = false;
  bool would_block = false;  // EAGAIN: the source is empty, or the destination (or pipe) full
  int error = 0;             // any other errno (ECONNRESET, EPIPE, ...)
};

class SplicePipe {
 public:
  // 1 MiB where the kernel allows it (fewer calls and loop turns per byte) while
  // `large_pipes`, the owner's count of such pipes, is under kLargePipesPerServer; the pipe
  // counts itself there until it closes. Else the kernel's default of 16 pages. Returns an
  // invalid pipe when the process is out of descriptors: the caller relays through a buffer.
  static SplicePipe open(std::size_t& large_pipes);

  SplicePipe() = default;
  SplicePipe(SplicePipe&& other) noexcept;
  SplicePipe& operator=(SplicePipe&& other) noexcept;
  ~SplicePipe();

  [[nodiscard]] bool valid() const { return read_end_.valid(); }
  // Bytes in the pipe, not yet written to the destination.
  [[nodiscard]] std::size_t held() const { return held_; }

  // From the socket `from` into the pipe. Both ends are non-blocking.
  SpliceStep fill(int from);
  // From the pipe into the socket `to`.
  SpliceStep drain(int to);

 private:
  UniqueFd read_end_;
  UniqueFd write_end_;
  std::size_t held_ = 0;
  std::size_t* large_pipes_ = nullptr;  // the count this pipe is in, while it is large
};

// Pipes of 1 MiB one server holds at once. Bytes in a pipe are kernel memory that no socket
// buffer limit counts any more, and each slot can pin a page (or a larger page fragment) for a
// few bytes: the budget bounds that, beyond what the tunnel limits already do, to about
// 32 MiB nominal. Pipes past it get the default 16 slots.
inline constexpr std::size_t kLargePipesPerServer = 32;

}  // namespace oarbank::proxy
