// oarbank-agent: the launch binary. One binary per job of contract.md ("Commands") as far as
// the operator sees; underneath, two:
// - this one runs the plain `sandbox-exec` and `sandbox-run` lines (cli/exec_args.hpp) itself,
//   parsed by hand. It links no CLI11 and no translation unit that includes <iostream>, so
//   its start-up constructs no parser and runs no std::ios_base::Init (with GCC 12, every
//   such unit constructs one): together about 0.2 x a bare spawn of /bin/true per launch on
//   the build machine (docs/performance.md, "Where the time goes");
// - every other line (help, --version, --explain, the other sub-commands, any non-plain
//   option form, a malformed line) is answered by oarbank-agent-full, exec'd with the same
//   argv, found beside this binary. Those lines are not on a module's start path.
// tests/lean_launch_test.sh checks that this binary stays so (no CLI11, no iostream).
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "cli/commands.hpp"
#include "cli/plain_line.hpp"
#include "sys/error.hpp"

namespace {

constexpr const char* kFullBinary = "oarbank-agent-full";

// Execs oarbank-agent-full with this process's argv; returns only on failure. Where it lies:
// beside this binary (the build tree), else ../lib/oarbank-agent/ from it (the package:
// /usr/bin/oarbank-agent and /usr/lib/oarbank-agent/oarbank-agent-full). The directory comes
// from /proc/self/exe, the file the kernel ran, never from argv[0] or $PATH, which the
// caller chooses.
int exec_full_binary(char** argv) {
  using namespace oarbank;
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    cli::print_error("", std::string("cannot find ") + kFullBinary +
                             ": readlink /proc/self/exe failed: " + errno_text(errno));
    return exit_code_for(ErrorKind::Internal);
  }
  std::string dir(self, static_cast<std::size_t>(n));
  dir.erase(dir.rfind('/') + 1);
  const std::string candidates[] = {dir + kFullBinary, dir + "../lib/oarbank-agent/" + kFullBinary};
  int err = ENOENT;
  for (const auto& path : candidates) {
    ::execv(path.c_str(), argv);
    err = errno;
    if (err != ENOENT) {
      cli::print_error("", "cannot run " + path + ": exec failed: " + errno_text(err));
      return exit_code_for(ErrorKind::Internal);
    }
  }
  cli::print_error("", std::string("cannot run ") + kFullBinary +
                           " (help, --version and every "
                           "command but a plain sandbox-exec or sandbox-run): it is neither at " +
                           candidates[0] + " nor at " + candidates[1] + ": " + errno_text(err));
  return exit_code_for(ErrorKind::Internal);
}

}  // namespace

int main(int argc, char** argv) {
  if (auto code = oarbank::cli::run_plain_line(argc, argv)) return *code;
  return exec_full_binary(argv);
}
