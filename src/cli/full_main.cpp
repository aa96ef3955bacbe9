// oarbank-agent-full: every command and form of contract.md ("Commands"), with CLI11. The
// launch binary, oarbank-agent (src/cli/main.cpp), runs the plain sandbox-exec and sandbox-run
// lines itself and execs this one for every other line (help, --version, --explain,
// sandbox-report, sandbox-check, sandbox-ctl, egress-proxy, the non-plain option forms). It
// answers every line as oarbank-agent did when it was one binary: its messages name
// "oarbank-agent", and it runs the plain lines too, so it can stand in for the agent where one
// binary is wanted (tests/CMakeLists.txt's oarbank-agent-skipstep).
#include "cli/command_line.hpp"
#include "cli/plain_line.hpp"

int main(int argc, char** argv) {
  if (auto code = oarbank::cli::run_plain_line(argc, argv)) return *code;
  return oarbank::cli::run_command_line(argc, argv);
}
