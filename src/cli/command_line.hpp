#pragma once

// The whole command line of contract.md ("Commands"), parsed with CLI11: help, --version,
// every sub-command and every option form. The one file that includes CLI11 is
// command_line.cpp; oarbank-agent-full's main() calls this, and oarbank-agent (the launch
// binary, src/cli/main.cpp) execs oarbank-agent-full for any line that is not a plain
// sandbox-exec or sandbox-run.
namespace oarbank::cli {

int run_command_line(int argc, char** argv);

}  // namespace oarbank::cli
