#pragma once

// The launch path's own command line: a plain `sandbox-exec` or `sandbox-run` line
// (cli/exec_args.hpp), parsed by hand and run, with no CLI11 and no <iostream> on the way
// (docs/performance.md). Both binaries start here.
#include <optional>

namespace oarbank::cli {

// The command's exit code when argv is a plain sandbox-exec or sandbox-run line (a launch
// that succeeds never returns: it execs); nothing for any other line.
std::optional<int> run_plain_line(int argc, char** argv);

}  // namespace oarbank::cli
