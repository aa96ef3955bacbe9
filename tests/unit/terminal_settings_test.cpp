// The operator's terminal while sandbox-run relays it (src/supervise/terminal.cpp): raw input,
// so that ^C, ^Z and ^D reach the module's pty as bytes, with the output processing kept.
#include <gtest/gtest.h>
#include <termios.h>

#include "supervise/terminal.hpp"

namespace oarbank {
namespace {

TEST(RelaySettings, InputIsRawAndOutputProcessingIsKept) {
  termios cooked{};
  cooked.c_iflag = ICRNL | IXON | BRKINT;
  cooked.c_oflag = OPOST | ONLCR;
  cooked.c_lflag = ECHO | ECHOE | ICANON | ISIG | IEXTEN;
  cooked.c_cflag = CS7 | PARENB | CREAD;
  const termios raw = relay_settings(cooked);
  EXPECT_EQ(raw.c_lflag & (ECHO | ICANON | ISIG | IEXTEN), 0U) << "echo, lines, ^C, ^V";
  EXPECT_EQ(raw.c_iflag & (ICRNL | IXON | BRKINT), 0U) << "CR to NL, ^S/^Q, break";
  EXPECT_EQ(raw.c_oflag, cooked.c_oflag) << "output processing is kept";
  EXPECT_EQ(raw.c_cflag & CSIZE, static_cast<tcflag_t>(CS8));
  EXPECT_EQ(raw.c_cflag & PARENB, 0U);
  EXPECT_NE(raw.c_cflag & CREAD, 0U);
  EXPECT_EQ(raw.c_cc[VMIN], 1);
  EXPECT_EQ(raw.c_cc[VTIME], 0);
}

}  // namespace
}  // namespace oarbank
