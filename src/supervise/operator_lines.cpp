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
  // Attack review (session 15): an attribute reset is not all a module can leave behind. The
  // DEC line-drawing set (ESC ( 0, or SO) garbled the lines, default colours set to the
  // background's (OSC 10 and 11) hid them, and line wrap off (ESC [ ? 7 l) cut them short. So
  // first: the ASCII set in G0 and G0 in use (ESC ( B, SI), the default colours and cursor
  // colour back (OSC 110, 111, 112), wrap and the cursor on, mouse reports off, the main
  // screen. An ESC ends any string the module left open (the VT parser's "anywhere"
  // transition); ST then ends one in terminals that wait for it, and the attributes go last.
  std::string prefix =
      "\x1b(B\x0f\x1b]110\x07\x1b]111\x07\x1b]112\x07\x1b[?7h\x1b[?25h"
      "\x1b[?1000;1002;1003;1006l\x1b[?1049l\x1b\\\x1b[0m";
  if ((marks & kMidLine) != 0) prefix += "\r\n";
  return prefix;
}

}  // namespace oarbank
