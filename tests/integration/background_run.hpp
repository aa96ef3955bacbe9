// sandbox-run (or any command) in the background, its stdout and stderr in a file: two modules
// at once, or a module watched while it runs.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"

namespace oarbank::it {

class BackgroundRun {
 public:
  BackgroundRun(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                std::string output)
      : output_(std::move(output)) {
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(output_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int null = ::open("/dev/null", O_RDONLY);
      ::dup2(null, 0);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      exec_in_child(argv, env);
    }
  }
  ~BackgroundRun() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  BackgroundRun(const BackgroundRun&) = delete;
  BackgroundRun& operator=(const BackgroundRun&) = delete;
  [[nodiscard]] pid_t pid() const { return pid_; }
  // The output so far ("" before the file exists).
  [[nodiscard]] std::string output() const { return exists(output_) ? read_file(output_) : ""; }
  // Waits until the output holds `count` lines; false on timeout.
  bool wait_lines(std::size_t count,
                  std::chrono::milliseconds timeout = std::chrono::seconds(10)) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string out = output();
      if (static_cast<std::size_t>(std::count(out.begin(), out.end(), '\n')) >= count) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  // Sends `sig`, then waits as wait() does.
  int stop(int sig, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
    return wait(timeout);
  }
  // The exit code (128+N for signal N); -1 on timeout.
  int wait(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    if (reaped_) return code_;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return code_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return -1;
  }

 private:
  std::string output_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int code_ = -1;
};

// The node's namespace stock (sandbox-stock --verbose, supervise/namespace_stock.hpp) serving
// `state_dir` while this lives, its lines in `log`; stopped with SIGTERM, as systemd does.
class StockServing {
 public:
  StockServing(const std::string& state_dir, std::vector<std::string> env, const std::string& log)
      : run_({OARBANK_AGENT_BINARY, "sandbox-stock", "--verbose"},
             with_state_dir(std::move(env), state_dir), log) {
    ready_ = eventually([this] { return run_.output().find(" serving ") != std::string::npos; },
                        std::chrono::seconds(10));
  }
  ~StockServing() { run_.stop(SIGTERM); }
  StockServing(const StockServing&) = delete;
  StockServing& operator=(const StockServing&) = delete;
  [[nodiscard]] bool ready() const { return ready_; }
  [[nodiscard]] std::string log() const { return run_.output(); }
  // Stops it now: its exit code.
  int stop() { return run_.stop(SIGTERM); }

 private:
  static std::vector<std::string> with_state_dir(std::vector<std::string> env,
                                                 const std::string& state_dir) {
    env.push_back("OARBANK_STATE_DIR=" + state_dir);
    return env;
  }
  BackgroundRun run_;
  bool ready_ = false;
};

// ctest runs the tests of the module's world a second time with OARBANK_TEST_NAMESPACE_STOCK
// set (the "stock." copies, tests/CMakeLists.txt): their fixtures then start a stock on their
// run state directory, so that every run of theirs takes its namespaces from it, and each of
// those tests shows that the world a run takes is the world a run makes.
inline bool namespace_stock_asked() {
  return std::getenv("OARBANK_TEST_NAMESPACE_STOCK") != nullptr;
}

}  // namespace oarbank::it
