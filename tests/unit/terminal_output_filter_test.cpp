// Session 15's attack review: the module's pty output reaches the operator's terminal less the
// OSC sequences that go beyond its screen (the clipboard, OSC 52; the titles, OSC 0, 1, 2),
// however the reads split them; everything else passes as it came.
#include "supervise/terminal_output_filter.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace oarbank {
namespace {

std::string filtered(const std::vector<std::string>& reads, unsigned long* dropped = nullptr) {
  TerminalOutputFilter filter;
  std::string out;
  for (const auto& read : reads) filter.feed(read, out);
  if (dropped != nullptr) *dropped = filter.dropped();
  return out;
}

// Every way of splitting `text` into two reads gives the same output as one read.
std::string split_everywhere(const std::string& text) {
  const std::string whole = filtered({text});
  for (std::size_t at = 0; at <= text.size(); ++at) {
    EXPECT_EQ(filtered({text.substr(0, at), text.substr(at)}), whole) << "split at " << at;
  }
  return whole;
}

TEST(TerminalOutputFilter, TheClipboardAndTitlesAreDroppedWhateverTheirTerminator) {
  unsigned long dropped = 0;
  EXPECT_EQ(filtered({"a\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07"
                      "b"},
                     &dropped),
            "ab");
  EXPECT_EQ(dropped, 1U);
  EXPECT_EQ(split_everywhere("a\x1b]52;c;Y3Vy\x1b\\b"), "ab");
  EXPECT_EQ(split_everywhere("\x1b]0;title\x07x\x1b]2;t\x1b\\y\x1b]1;i\x07z"), "xyz");
  // CAN and SUB end a string too; a new ESC ] begins another OSC.
  EXPECT_EQ(split_everywhere("\x1b]52;c;AA\x18q"), "q");
  EXPECT_EQ(split_everywhere("\x1b]52;c;AA\x1b]52;c;BB\x07r"), "r");
}

TEST(TerminalOutputFilter, EverythingElsePassesAsItCame) {
  for (const std::string& text :
       {std::string("plain text\r\n"), std::string("\x1b[1;31mred\x1b[0m"),
        std::string("\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\"),
        std::string("\x1b]10;#101010\x07"), std::string("\x1b\x1b[0m"),
        std::string("\x1b]521;x\x07"), std::string("\x1b]5;x\x07"), std::string("\x1b]\x07"),
        std::string("\x1b(0lqk\x1b(B"), std::string("\x1bP1$r\x1b\\")}) {
    EXPECT_EQ(split_everywhere(text), text);
  }
  // An OSC left open at the end is held no longer than its number: the rest passes.
  EXPECT_EQ(filtered({"\x1b]8;;x"}), "\x1b]8;;x");
  EXPECT_EQ(filtered({"\x1b]1234567;x"}), "\x1b]1234567;x");
}

}  // namespace
}  // namespace oarbank
