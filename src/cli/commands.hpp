#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace oarbank::cli {

// Each sub-command registers its options and returns the function main() runs when it was
// chosen; that function returns the exit code.
using Runner = std::function<int()>;

Runner add_sandbox_exec(CLI::App& app);
Runner add_sandbox_report(CLI::App& app);
Runner add_sandbox_check(CLI::App& app);
// Hidden: the operations sandbox-report --verify runs inside the sandbox.
Runner add_sandbox_probe(CLI::App& app);

// Prints "oarbank-agent COMMAND: MESSAGE" as one line of printable ASCII: a hostile policy
// cannot put a newline or a terminal escape sequence on the operator's screen.
void print_error(const std::string& command, const std::string& message);

}  // namespace oarbank::cli
