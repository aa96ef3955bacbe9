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
    const bool takes_value = word == "--config" || word == "--setenv" || word == "--keep-fd" ||
                             word == "--status-fd";
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
    } else if (word.starts_with("-") || have_policy) {
      return std::nullopt;  // --explain, --help, --opt=value, an unknown option, a second word
    } else {
      args.policy_path = std::string(word);
      have_policy = true;
    }
  }
  if (!have_policy || !args.separator) return std::nullopt;
  return args;
}

}  // namespace oarbank::cli
