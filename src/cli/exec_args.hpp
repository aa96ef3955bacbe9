// sandbox-exec's plain command line, parsed by hand: the launcher is on every module's start
// path, and building the CLI11 parser costs about 0.4 ms per launch on this kind of machine
// (docs/performance.md). Anything beyond the plain form (--help, --explain, an unknown option,
// a malformed value) is left to CLI11, so messages and exit codes stay the same.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oarbank::cli {

struct ExecArgs {
  std::string policy_path;
  std::optional<std::string> config_path;
  std::vector<std::string> setenv;
  std::vector<int> keep_fds;
  std::optional<int> status_fd;  // sandbox-run's status channel (hidden option)
  bool explain = false;
  bool separator = false;
  std::vector<std::string> argv;  // after "--"
  friend bool operator==(const ExecArgs&, const ExecArgs&) = default;
};

// sandbox-run's options: sandbox-exec's, and the parent's own.
struct RunArgs {
  ExecArgs exec;  // policy, --config, --setenv, --keep-fd, --explain, the module's argv
  std::optional<std::string> id;
  std::optional<double> timeout;
  double kill_after = 10;
  std::optional<std::string> result_path;
  std::optional<std::string> proxy_log;
  bool denials = false;      // --denials: the summary of refusals on stderr even when it succeeds
  std::optional<int> learn;  // --learn N: propose a policy from up to N runs (cli/learn.hpp)
  friend bool operator==(const RunArgs&, const RunArgs&) = default;
};

// Issue 16: a duration as timeout(1) and systemd take one: a decimal number of seconds, or
// with a unit s, m, h or d ("10s", "2m", "1.5h", "0.5"). Nothing for anything else (a sign,
// an exponent, another unit, two units).
std::optional<double> parse_duration(std::string_view text);

// argv[1] "sandbox-run": the plain form `[--config F] [--id ID] [--timeout S] [--kill-after S]
// [--result F] [--proxy-log F] [--setenv N=V]... [--keep-fd N]... POLICY -- ARGV...`, else
// nullopt (CLI11 then parses it, and words its errors).
std::optional<RunArgs> parse_plain_run_args(int argc, const char* const* argv);

// argv[0] is the program, argv[1] "sandbox-exec". Returns nullopt when the line is not the
// plain form `[--config F] [--setenv N=V]... [--keep-fd N]... [--status-fd N] POLICY -- ARGV...`.
std::optional<ExecArgs> parse_plain_exec_args(int argc, const char* const* argv);

}  // namespace oarbank::cli
