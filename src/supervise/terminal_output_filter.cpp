#include "supervise/terminal_output_filter.hpp"

namespace oarbank {
namespace {

constexpr char kEsc = '\x1b';
constexpr char kBel = '\x07';
constexpr char kCan = '\x18';
constexpr char kSub = '\x1a';
// Longer than any OSC number a terminal knows: such a sequence is passed, not held on.
constexpr std::size_t kMostDigits = 6;

// BEL and ST end a string; CAN and SUB cancel it (ST, ESC \, is handled where ESC is).
bool ends_string(char byte) { return byte == kBel || byte == kCan || byte == kSub; }

// The OSC numbers that reach beyond the module's screen: the window and icon titles, the
// clipboard and selections.
bool dropped_number(const std::string& digits) {
  return digits == "0" || digits == "1" || digits == "2" || digits == "52";
}

}  // namespace

void TerminalOutputFilter::start_osc_number() {
  held_ = "\x1b]";
  state_ = State::OscNumber;
}

// The byte after an OSC's digits: the sequence is dropped or passed from here.
void TerminalOutputFilter::decide(char byte, std::string& out) {
  const std::string digits = held_.substr(2);
  if (dropped_number(digits)) {
    ++dropped_;
    held_.clear();
    if (ends_string(byte)) {
      state_ = State::Ground;
    } else if (byte == kEsc) {
      state_ = State::OscDropEscape;
    } else {
      state_ = State::OscDrop;
    }
    return;
  }
  out += held_;
  held_.clear();
  if (byte == kEsc) {
    held_ = "\x1b";
    state_ = State::OscPassEscape;
    return;
  }
  out += byte;
  state_ = ends_string(byte) ? State::Ground : State::OscPass;
}

void TerminalOutputFilter::feed(std::string_view in, std::string& out) {
  for (const char byte : in) {
    switch (state_) {
      case State::Ground:
        if (byte == kEsc) {
          held_ = "\x1b";
          state_ = State::Escape;
        } else {
          out += byte;
        }
        break;
      case State::Escape:
        if (byte == ']') {
          start_osc_number();
        } else if (byte == kEsc) {
          out += held_;  // the first ESC began nothing; this one may
        } else {
          out += held_;
          out += byte;
          held_.clear();
          state_ = State::Ground;
        }
        break;
      case State::OscNumber:
        if (byte >= '0' && byte <= '9' && held_.size() - 2 < kMostDigits) {
          held_ += byte;
        } else {
          decide(byte, out);
        }
        break;
      case State::OscPass:
        if (byte == kEsc) {
          held_ = "\x1b";
          state_ = State::OscPassEscape;
        } else {
          out += byte;
          if (ends_string(byte)) state_ = State::Ground;
        }
        break;
      case State::OscPassEscape:
      case State::OscDropEscape: {
        const bool dropping = state_ == State::OscDropEscape;
        // ESC \ ends the string; ESC ] begins another OSC; any other ESC ends the string and
        // begins an escape sequence of its own (the VT parser's "anywhere" transition).
        if (byte == ']') {
          start_osc_number();
        } else if (byte == kEsc) {
          if (!dropping) out += held_;
          held_ = "\x1b";
          state_ = dropping ? State::OscDropEscape : State::OscPassEscape;
        } else {
          if (!dropping || byte != '\\') {
            out += "\x1b";
            out += byte;
          }
          held_.clear();
          state_ = State::Ground;
        }
        break;
      }
      case State::OscDrop:
        if (byte == kEsc) {
          state_ = State::OscDropEscape;
        } else if (ends_string(byte)) {
          state_ = State::Ground;
        }
        break;
    }
  }
}

}  // namespace oarbank
