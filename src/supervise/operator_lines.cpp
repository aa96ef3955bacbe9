#include "supervise/operator_lines.hpp"

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <new>

namespace oarbank {
namespace {

constexpr std::uint32_t kShown = 1;    // the module's output was shown since the last line
constexpr std::uint32_t kMidLine = 2;  // ... and its last byte was not a newline

// In a MAP_SHARED page: the front's writes are seen by the supervisor, its child. Lock-free
// atomics are address-free, so one in memory two processes share is well defined. The module
// never sees it: the launcher's exec drops the mapping.
std::atomic<std::uint32_t>* g_marks = nullptr;
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

}  // namespace

bool make_operator_line_marks() {
  if (g_marks != nullptr) return true;
  void* page = ::mmap(nullptr, sizeof(std::atomic<std::uint32_t>), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return false;
  g_marks = new (page) std::atomic<std::uint32_t>(0);
  return true;
}

void mark_module_output_shown(char last) noexcept {
  if (g_marks != nullptr) g_marks->store(kShown | (last == '\n' ? 0 : kMidLine));
}

std::string operator_line_prefix() {
  if (g_marks == nullptr) return "";
  const std::uint32_t marks = g_marks->exchange(0);
  if ((marks & kShown) == 0) return "";
  std::string prefix = "\x1b\\\x1b[0m";
  if ((marks & kMidLine) != 0) prefix += "\r\n";
  return prefix;
}

}  // namespace oarbank
