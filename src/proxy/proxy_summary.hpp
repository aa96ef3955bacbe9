// Issue 16: the proxy's log as a person at a terminal reads it (pure). sandbox-run without
// --proxy-log, its stderr a terminal, shows one line per refusal instead of the JSON lines
// (which stay the form everywhere else: a pipe, a file, the journal). docs/sandbox-run.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace oarbank::proxy {

// The one-line summary of a proxy log line (docs/proxy.md's fields) that records a refusal,
// without a newline, printable ASCII (other bytes as \\xNN); nullopt for every other line (allowed
// decisions, closed connections, a line that is not a JSON object). `first`: the first summary says
// where the full log is.
std::optional<std::string> proxy_refusal_summary(std::string_view json_line, bool first);

}  // namespace oarbank::proxy
