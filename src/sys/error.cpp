#include "sys/error.hpp"

#include <fmt/format.h>

#include <cstring>

namespace oarbank {

std::string errno_text(int err) {
  const char* name = strerrorname_np(err);
  return fmt::format("{} ({})", name != nullptr ? name : std::to_string(err).c_str(),
                     std::strerror(err));
}

}  // namespace oarbank
