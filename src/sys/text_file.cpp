#include "sys/text_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "sys/unique_fd.hpp"

namespace oarbank {

std::string read_fd_text(int fd) {
  std::string text;
  char buffer[4096];
  off_t offset = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buffer, sizeof buffer, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    offset += n;
  }
  return text;
}

std::string read_text_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  return fd.valid() ? read_fd_text(fd.get()) : std::string();
}

}  // namespace oarbank
