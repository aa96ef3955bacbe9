// The command line's one error convention: one printable line on stderr per failure, and the
// mapping of what a command throws to its exit code (cli/commands.hpp). In both binaries.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "supervise/operator_lines.hpp"
#include "sys/error.hpp"

namespace oarbank::cli {
namespace {
std::string g_last_error_line;
}  // namespace

const std::string& last_error_line() { return g_last_error_line; }

void print_error(const std::string& command, const std::string& message) {
  std::string line = "oarbank-agent";
  if (!command.empty()) line += " " + command;
  line += ": ";
  for (unsigned char c : message) {
    if (c >= 0x20 && c < 0x7f) {
      line += static_cast<char>(c);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      line += escaped;
    }
  }
  g_last_error_line = line;
  // On a terminal, after the module's output: a reset first (supervise/operator_lines.hpp).
  line = operator_line_prefix() + line + '\n';
  std::fputs(line.c_str(), stderr);
}

int run_guarded(const std::string& command, const std::string& policy_path,
                const std::function<int()>& body) {
  try {
    return body();
  } catch (const PolicyError& e) {
    print_error(command, "invalid policy " +
                             (policy_path == "-" ? std::string("(standard input)") : policy_path) +
                             ": " + e.what());
    return exit_code_for(e.kind());
  } catch (const Error& e) {  // ConfigError, and every other kind (sys/error.hpp)
    print_error(command, e.what());
    return exit_code_for(e.kind());
  }
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace oarbank::cli
