// On a terminal, two processes write to the operator's terminal (terminal_front.hpp): the
// front, the module's output as it is, and the supervisor, its own lines (refusals, the
// proxy's summaries, how the run ended). A module can end its output inside an escape string
// (an unterminated OSC, DCS or APC swallows what follows until a string terminator) or after
// ESC [8m (concealed text), and hide the supervisor's lines with it (attack review). So the
// front marks, in a page both processes share, that it has shown the module's output, and
// whether the last byte shown ended a line; the supervisor's first line after that is
// preceded by a reset.
#pragma once

#include <string>

namespace oarbank {

// Made before the front's fork (split_front), shared by both; until then, and in a run
// without a terminal, none: every call below does nothing. False when the page cannot be
// made (the lines are then written without a reset, as before).
bool make_operator_line_marks();

// The front, after it wrote the module's output to the operator's terminal: `last` is the
// last byte it wrote.
void mark_module_output_shown(char last) noexcept;

// The supervisor, before a line of its own on the operator's terminal: "" unless the module's
// output was shown since the last such line; then ESC \ (the string terminator: ends an OSC,
// DCS, APC, PM or SOS string left open), ESC [0m (every attribute reset: concealed, colours,
// reverse) and, where that output did not end with a newline, "\r\n" (the line begins at
// column 0). Safe from any thread (the proxy's prints too).
std::string operator_line_prefix();

}  // namespace oarbank
