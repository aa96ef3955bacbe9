// sandbox-run (or any command) in the background, its stdout and stderr in a file: two modules
// at once, or a module watched while it runs.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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
  // The exit code (128+N for signal N); -1 on timeout.
  int wait(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return -1;
  }

 private:
  std::string output_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

}  // namespace oarbank::it
