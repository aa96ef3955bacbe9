#include "cli/plain_line.hpp"

#include <exception>
#include <string>

#include "cli/commands.hpp"
#include "sys/error.hpp"

namespace oarbank::cli {

std::optional<int> run_plain_line(int argc, char** argv) {
  if (auto plain = parse_plain_exec_args(argc, argv)) {
    try {
      return run_sandbox_exec(*plain);
    } catch (const std::exception& e) {
      print_error("sandbox-exec", std::string("internal error: ") + e.what());
      return exit_code_for(ErrorKind::Internal);
    }
  }
  if (auto plain = parse_plain_run_args(argc, argv)) {
    try {
      return run_sandbox_run(*plain);
    } catch (const std::exception& e) {
      print_error("sandbox-run", std::string("internal error: ") + e.what());
      return exit_code_for(ErrorKind::Internal);
    }
  }
  return std::nullopt;
}

}  // namespace oarbank::cli
