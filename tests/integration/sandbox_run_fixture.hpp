// sandbox-run's integration fixture (SandboxRun) and its helpers, shared by
// sandbox_run_test.cpp and the mechanisms' own test files (network_test.cpp): a suite that
// spans two files needs one fixture class, so it lives here, outside any anonymous namespace.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "background_run.hpp"
#include "sandbox_fixture.hpp"

namespace oarbank::it {

using namespace std::chrono_literals;

// The cgroup2 mount (the hybrid /sys/fs/cgroup/unified here), or "" when there is none.
inline std::string cgroup2_mount() {
  std::ifstream mountinfo("/proc/self/mountinfo");
  for (std::string line; std::getline(mountinfo, line);) {
    auto dash = line.find(" - cgroup2 ");
    if (dash == std::string::npos) continue;
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, dev, root, mount_point;
    fields >> id >> parent >> dev >> root >> mount_point;
    return mount_point;
  }
  return "";
}

// This process's cgroup: sandbox-run, started by the test, makes its leaves there.
inline std::string own_cgroup_dir() {
  std::ifstream cgroup("/proc/self/cgroup");
  for (std::string line; std::getline(cgroup, line);) {
    if (line.rfind("0::", 0) == 0) {
      std::string relative = line.substr(3);
      if (relative.ends_with("/oarbank-supervisor")) relative.resize(relative.size() - 19);
      return cgroup2_mount() + (relative == "/" ? "" : relative);
    }
  }
  return "";
}

// sandbox-run as a child the test does not wait for at once: for sandbox-ctl, for signals.
class Background {
 public:
  // `user`: run as this uid and gid, with no supplementary groups (the test must be root).
  Background(const std::vector<std::string>& argv, const std::vector<std::string>& env,
             const std::string& output, std::optional<std::pair<uid_t, gid_t>> user = {}) {
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int null = ::open("/dev/null", O_RDONLY);
      ::dup2(null, 0);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      if (user && !become_user(user->first, user->second)) ::_exit(126);
      exec_in_child(argv, env);
    }
  }
  ~Background() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  [[nodiscard]] pid_t pid() const { return pid_; }
  // The exit code as a shell shows it (128+N for signal N); -1 on timeout.
  int wait(std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(5ms);
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

class SandboxRun : public UncappedTest {
 protected:
  SandboxRun() : id(unique_name("it")), state_dir(tree.path("state")) {}
  void SetUp() override {
    if (namespace_stock_asked() && running_as_root()) {
      stock_.emplace(state_dir, launcher_environment(), tree.path("stock.log"));
      ASSERT_TRUE(stock_->ready()) << stock_->log();
    }
  }

  std::vector<std::string> env() const {
    auto e = launcher_environment();
    e.push_back("OARBANK_STATE_DIR=" + state_dir);
    return e;
  }
  std::vector<std::string> run_argv(const std::vector<std::string>& options,
                                    const std::vector<std::string>& module,
                                    const std::string& policy_file = "") const {
    std::vector<std::string> argv{agent, "sandbox-run", "--config", config_path, "--id", id};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back(policy_file.empty() ? policy() : policy_file);
    argv.emplace_back("--");
    argv.insert(argv.end(), module.begin(), module.end());
    return argv;
  }
  std::string policy() const { return tree.write_json("run.json", base_policy()); }
  RunResult run(const std::vector<std::string>& options, const std::vector<std::string>& module,
                const std::string& policy_file = "") {
    RunOptions o;
    o.env = env();
    o.timeout = 20s;
    return run_command(run_argv(options, module, policy_file), o);
  }
  RunResult ctl(const std::string& action, const std::string& which = "") {
    RunOptions o;
    o.env = env();
    return run_command({OARBANK_AGENT_BINARY, "sandbox-ctl", action, which.empty() ? id : which},
                       o);
  }
  std::vector<std::string> payload(std::vector<std::string> args) const {
    args.insert(args.begin(), tree.probe());
    return args;
  }
  nlohmann::json result() const { return nlohmann::json::parse(read_file(result_path())); }
  std::string result_path() const { return tree.path("result.json"); }
  std::string leaf() const { return own_cgroup_dir() + "/oarbank-" + id; }
  // Nothing of the run is left: no leaf, no state file.
  void expect_nothing_left(const std::string& which = "") const {
    const std::string name = which.empty() ? id : which;
    EXPECT_FALSE(exists(own_cgroup_dir() + "/oarbank-" + name)) << "leaf of " << name << " left";
    EXPECT_FALSE(exists(state_dir + "/" + name + ".json")) << "state of " << name << " left";
  }
  static bool have_cgroup() { return running_as_root() && !cgroup2_mount().empty(); }

  std::string id;
  std::string state_dir;
  std::string agent = OARBANK_AGENT_BINARY;
  std::optional<StockServing> stock_;  // only for the "stock." copies of the tests
};

}  // namespace oarbank::it
