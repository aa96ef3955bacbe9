#include "cli/exec_args.hpp"

#include <charconv>
#include <string_view>

namespace oarbank::cli {

std::optional<ExecArgs> parse_plain_exec_args(int argc, const char* const* argv) {
  if (argc < 2 || std::string_view(argv[1]) != "sandbox-exec") return std::nullopt;
  ExecArgs args;
  bool have_policy = false;
  for (int i = 2; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word == "--") {
      args.separator = true;
      args.argv.assign(argv + i + 1, argv + argc);
      break;
    }
    const bool takes_value =
        word == "--config" || word == "--setenv" || word == "--keep-fd" || word == "--status-fd";
    if (takes_value) {
      if (i + 1 >= argc) return std::nullopt;
      const std::string_view value = argv[++i];
      if (value == "--") return std::nullopt;
      if (word == "--config") {
        if (args.config_path) return std::nullopt;  // CLI11 decides what a repeat means
        args.config_path = std::string(value);
      } else if (word == "--setenv") {
        args.setenv.emplace_back(value);
      } else {
        int fd = -1;
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), fd);
        if (ec != std::errc() || end != value.data() + value.size()) return std::nullopt;
        if (word == "--keep-fd") {
          args.keep_fds.push_back(fd);
        } else {
          if (args.status_fd) return std::nullopt;
          args.status_fd = fd;
        }
      }
    } else if ((word.starts_with("-") && word != "-") || have_policy) {
      return std::nullopt;  // --explain, --help, --opt=value, an unknown option, a second word
    } else {
      args.policy_path = std::string(word);
      have_policy = true;
    }
  }
  if (!have_policy || !args.separator) return std::nullopt;
  return args;
}

namespace {

// A duration parse_duration reads ("0.5", "30", "10s", "2m"): anything else is CLI11's to
// judge (and to word the error).
std::optional<double> plain_seconds(std::string_view text) { return parse_duration(text); }

}  // namespace

std::optional<double> parse_duration(std::string_view text) {
  if (text.empty() || text.size() > 32) return std::nullopt;
  double unit = 1;
  switch (text.back()) {
    case 's':
      text.remove_suffix(1);
      break;
    case 'm':
      unit = 60;
      text.remove_suffix(1);
      break;
    case 'h':
      unit = 3600;
      text.remove_suffix(1);
      break;
    case 'd':
      unit = 86400;
      text.remove_suffix(1);
      break;
    default:
      break;
  }
  // Digits and one '.', as timeout(1) reads them: no sign, no exponent, no hex.
  if (text.empty() || text.find_first_not_of("0123456789.") != std::string_view::npos) {
    return std::nullopt;
  }
  double value = 0;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::fixed);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value * unit;
}

std::optional<RunArgs> parse_plain_run_args(int argc, const char* const* argv) {
  if (argc < 2 || std::string_view(argv[1]) != "sandbox-run") return std::nullopt;
  RunArgs args;
  bool have_policy = false;
  for (int i = 2; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word == "--") {
      args.exec.separator = true;
      args.exec.argv.assign(argv + i + 1, argv + argc);
      break;
    }
    if (word == "--denials") {  // a flag: the denials' summary even when the module succeeds
      if (args.denials) return std::nullopt;  // CLI11 decides what a repeat means
      args.denials = true;
      continue;
    }
    const bool takes_value = word == "--config" || word == "--setenv" || word == "--keep-fd" ||
                             word == "--id" || word == "--timeout" || word == "--kill-after" ||
                             word == "--result" || word == "--proxy-log";
    if (takes_value) {
      if (i + 1 >= argc) return std::nullopt;
      const std::string_view value = argv[++i];
      if (value == "--" || value.empty()) return std::nullopt;
      auto once = [](auto& slot, std::string_view v) {
        if (slot) return false;  // CLI11 decides what a repeat means
        slot = std::string(v);
        return true;
      };
      if (word == "--config") {
        if (!once(args.exec.config_path, value)) return std::nullopt;
      } else if (word == "--id") {
        if (!once(args.id, value)) return std::nullopt;
      } else if (word == "--result") {
        if (!once(args.result_path, value)) return std::nullopt;
      } else if (word == "--proxy-log") {
        if (!once(args.proxy_log, value)) return std::nullopt;
      } else if (word == "--setenv") {
        args.exec.setenv.emplace_back(value);
      } else if (word == "--timeout" || word == "--kill-after") {
        auto seconds = plain_seconds(value);
        if (!seconds) return std::nullopt;
        if (word == "--timeout") {
          if (args.timeout) return std::nullopt;
          args.timeout = seconds;
        } else {
          args.kill_after = *seconds;
        }
      } else {
        int fd = -1;
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), fd);
        if (ec != std::errc() || end != value.data() + value.size()) return std::nullopt;
        args.exec.keep_fds.push_back(fd);
      }
    } else if ((word.starts_with("-") && word != "-") || have_policy) {
      return std::nullopt;
    } else {
      args.exec.policy_path = std::string(word);
      have_policy = true;
    }
  }
  if (!have_policy || !args.exec.separator) return std::nullopt;
  return args;
}

}  // namespace oarbank::cli
