#include "cli/learn.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "plan/denials.hpp"
#include "sys/error.hpp"
#include "sys/text_file.hpp"
#include "sys/unique_fd.hpp"

extern char** environ;

namespace oarbank::cli {
namespace {

constexpr const char* kCommand = "sandbox-run";

std::string read_policy_text(const std::string& path) {
  if (path == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  return read_text_file(path);
}

void write_text(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid() ||
      ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    throw Error(ErrorKind::StepFailed,
                "step learn failed: write " + path + ": " + errno_text(errno));
  }
}

// One trial: this binary's sandbox-run with the proposed policy; the exit code as a shell
// shows it.
int run_trial(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(ErrorKind::StepFailed, "step learn failed: fork: " + errno_text(errno));
  if (pid == 0) {
    ::execve("/proc/self/exe", args.data(), environ);
    ::_exit(71);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int run_learn(const RunArgs& options) {
  const int rounds = *options.learn;
  if (rounds < 1 || rounds > 100) throw Error(ErrorKind::Usage, "--learn: expected 1 to 100 runs");
  if (options.result_path) {
    throw Error(ErrorKind::Usage, "--learn and --result: each trial's result is its own");
  }
  const nlohmann::json given =
      nlohmann::json::parse(read_policy_text(options.exec.policy_path), nullptr, false);
  if (!given.is_object()) {
    throw Error(ErrorKind::Usage, options.exec.policy_path + ": not a JSON object (the policy)");
  }
  char dir_template[] = "/tmp/oarbank-learn-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    throw Error(ErrorKind::StepFailed, "step learn failed: mkdtemp: " + errno_text(errno));
  }
  const std::string dir = dir_template;
  const std::string policy_file = dir + "/policy.json", result_file = dir + "/result.json";
  nlohmann::json proposed = given;
  std::vector<std::string> changes;
  int code = 0, runs = 0;
  try {
    for (int round = 1; round <= rounds; ++round) {
      write_text(policy_file, proposed.dump(2) + "\n");
      ::unlink(result_file.c_str());
      std::vector<std::string> argv{"oarbank-agent", "sandbox-run", "--result", result_file};
      if (options.exec.config_path)
        argv.insert(argv.end(), {"--config", *options.exec.config_path});
      if (options.id)
        argv.insert(argv.end(), {"--id", *options.id + "-learn-" + std::to_string(round)});
      if (options.timeout) argv.insert(argv.end(), {"--timeout", std::to_string(*options.timeout)});
      argv.insert(argv.end(), {"--kill-after", std::to_string(options.kill_after)});
      if (options.proxy_log) argv.insert(argv.end(), {"--proxy-log", *options.proxy_log});
      for (const auto& entry : options.exec.setenv) argv.insert(argv.end(), {"--setenv", entry});
      for (int fd : options.exec.keep_fds)
        argv.insert(argv.end(), {"--keep-fd", std::to_string(fd)});
      argv.insert(argv.end(), {policy_file, "--"});
      argv.insert(argv.end(), options.exec.argv.begin(), options.exec.argv.end());
      code = run_trial(argv);
      ++runs;
      const auto result = nlohmann::json::parse(read_text_file(result_file), nullptr, false);
      if (!result.is_object() || result.value("end", "") == "not-started") {
        print_error(kCommand, "--learn: run " + std::to_string(round) +
                                  " did not start; the proposal so far follows");
        break;
      }
      std::size_t added = 0;
      for (const auto& denial : result.value("denials", nlohmann::json::array())) {
        const std::string change = apply_grant(proposed, denial.value("grant", nlohmann::json()));
        if (!change.empty()) {
          changes.push_back(change);
          ++added;
        }
      }
      if (added == 0) break;  // nothing more a policy can grant
    }
  } catch (...) {
    ::unlink(policy_file.c_str());
    ::unlink(result_file.c_str());
    ::rmdir(dir.c_str());
    throw;
  }
  ::unlink(policy_file.c_str());
  ::unlink(result_file.c_str());
  ::rmdir(dir.c_str());
  std::string out = "sandbox-run --learn: " + std::to_string(runs) + " run(s); " +
                    (changes.empty() ? std::string("no change to propose")
                                     : std::to_string(changes.size()) + " change(s) to " +
                                           options.exec.policy_path + ":") +
                    "\n";
  for (const auto& change : changes) out += change + "\n";
  out += proposed.dump(2) + "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return code;
}

}  // namespace oarbank::cli
