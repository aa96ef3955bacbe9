#include "proxy/splice_pipe.hpp"

#include <fcntl.h>

#include <cerrno>
#include <utility>

namespace oarbank::proxy {
namespace {

// The pipe's size, and as much as one call may move (the kernel stops at whichever of bytes
// and the pipe's slots, up to a page each, runs out first).
constexpr std::size_t kPipeBytes = 1 << 20;
constexpr std::size_t kSpliceChunk = kPipeBytes;

// SPLICE_F_MOVE is only a hint; SPLICE_F_NONBLOCK keeps the pipe side from blocking (the
// sockets are non-blocking themselves).
constexpr unsigned kSpliceFlags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;

SpliceStep step_from(ssize_t n) {
  SpliceStep step;
  if (n > 0) {
    step.bytes = static_cast<std::size_t>(n);
  } else if (n == 0) {
    step.end_of_stream = true;
  } else if (errno == EAGAIN) {
    step.would_block = true;
  } else {
    step.error = errno;
  }
  return step;
}

}  // namespace

SplicePipe SplicePipe::open(std::size_t& large_pipes) {
  SplicePipe pipe;
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC | O_NONBLOCK) == 0) {
    pipe.read_end_.reset(ends[0]);
    pipe.write_end_.reset(ends[1]);
    // Best effort: an unprivileged user past fs.pipe-user-pages-soft keeps the small pipe,
    // which still works.
    if (large_pipes < kLargePipesPerServer &&
        ::fcntl(ends[1], F_SETPIPE_SZ, static_cast<int>(kPipeBytes)) >= 0) {
      pipe.large_pipes_ = &large_pipes;
      ++large_pipes;
    }
  }
  return pipe;
}

SplicePipe::SplicePipe(SplicePipe&& other) noexcept
    : read_end_(std::move(other.read_end_)),
      write_end_(std::move(other.write_end_)),
      held_(std::exchange(other.held_, 0)),
      large_pipes_(std::exchange(other.large_pipes_, nullptr)) {}

SplicePipe& SplicePipe::operator=(SplicePipe&& other) noexcept {
  if (this != &other) {
    if (large_pipes_ != nullptr) --*large_pipes_;
    read_end_ = std::move(other.read_end_);
    write_end_ = std::move(other.write_end_);
    held_ = std::exchange(other.held_, 0);
    large_pipes_ = std::exchange(other.large_pipes_, nullptr);
  }
  return *this;
}

SplicePipe::~SplicePipe() {
  if (large_pipes_ != nullptr) --*large_pipes_;
}

SpliceStep SplicePipe::fill(int from) {
  ssize_t n;
  do {
    n = ::splice(from, nullptr, write_end_.get(), nullptr, kSpliceChunk, kSpliceFlags);
  } while (n < 0 && errno == EINTR);
  const SpliceStep step = step_from(n);
  held_ += step.bytes;
  return step;
}

SpliceStep SplicePipe::drain(int to) {
  ssize_t n;
  do {
    n = ::splice(read_end_.get(), nullptr, to, nullptr, held_, kSpliceFlags);
  } while (n < 0 && errno == EINTR);
  const SpliceStep step = step_from(n);
  held_ -= step.bytes;
  return step;
}

}  // namespace oarbank::proxy
