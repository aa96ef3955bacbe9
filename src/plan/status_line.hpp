// sandbox-run's status channel (sandbox-exec --status-fd, docs/launcher.md): the launcher
// writes "CODE<TAB>LINE\n" there when a step fails, and the exec step's name and "\n" just
// before the module's execve; the descriptor is close-on-exec, so its end of file tells the
// supervisor the exec happened. The line is composed here and parsed here, nowhere else.
// Pure: the callers write the bytes (one write(2), async-signal-safe in a cloned child).
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "plan/launch_steps.hpp"

namespace oarbank {

// Composes "CODE<TAB>" + the parts + "\n" into out[0, capacity). Returns its size, or 0 when
// it does not fit (nothing then is to be written). No allocation: a child sharing its
// parent's memory (supervise/spawn.cpp) builds its lines with it, at compile time.
constexpr std::size_t compose_status_line(char* out, std::size_t capacity, int code,
                                          std::initializer_list<std::string_view> parts) {
  char digits[12] = {};
  std::size_t n_digits = 0;
  unsigned value = code < 0 ? 0U : static_cast<unsigned>(code);
  do {
    digits[n_digits++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0 && n_digits < sizeof digits);
  std::size_t size = n_digits + 2;  // the tab and the newline
  for (std::string_view part : parts) size += part.size();
  if (size > capacity) return 0;
  std::size_t at = 0;
  while (n_digits > 0) out[at++] = digits[--n_digits];
  out[at++] = '\t';
  for (std::string_view part : parts) {
    for (char c : part) out[at++] = c;
  }
  out[at++] = '\n';
  return at;
}

template <std::size_t N>
struct FixedStatusLine {
  std::array<char, N> text{};
  std::size_t size = 0;
  [[nodiscard]] constexpr const char* data() const { return text.data(); }
  [[nodiscard]] constexpr std::string_view view() const { return {text.data(), size}; }
};

// "CODE<TAB>step NAME failed: WHAT\n", for `static constexpr` in a child that must not
// allocate. A line longer than N does not compile.
template <std::size_t N = 128>
constexpr FixedStatusLine<N> step_failure_status_line(int code, LaunchStep step,
                                                      std::string_view what) {
  FixedStatusLine<N> line;
  line.size =
      compose_status_line(line.text.data(), N, code, {"step ", step_name(step), " failed: ", what});
  if (line.size == 0) throw "the status line does not fit";  // a compile-time error
  return line;
}

// "CODE<TAB>LINE\n" for a failure the launcher reports (LINE as printed on stderr).
std::string status_failure_line(int code, std::string_view line);

// "exec\n": the launcher is about to exec the module.
inline constexpr FixedStatusLine<16> kStatusExecLine = [] {
  FixedStatusLine<16> line;
  const std::string_view name = step_name(LaunchStep::Exec);
  for (char c : name) line.text[line.size++] = c;
  line.text[line.size++] = '\n';
  return line;
}();

// What the supervisor read from the channel, to its end of file.
struct StatusReport {
  bool exec = false;  // the exec line came
  // The first failure line: its code (70 where the code is not a number) and its line.
  std::optional<int> code;
  std::string line;
};
StatusReport parse_status_channel(std::string_view text);

}  // namespace oarbank
