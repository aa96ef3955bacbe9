#include "sandbox_fixture.hpp"

#include <unistd.h>

#include <algorithm>

namespace oarbank::it {

void SandboxBase::init(int cap) {
  cap_ = cap;
  broker_path = tree.path("broker.sock");
  config_path = tree.write_json("agent.json", node_config());
}

nlohmann::json SandboxBase::node_config() const {
  nlohmann::json config = {
      {"proxy_listen", "127.0.0.1:" + std::to_string(proxy.port())},
      {"broker_socket", broker_path},
      // Issue 12: the tests that predate per-module users run every module as the fixed
      // module_user (the tree belongs to it); own_user_test.cpp turns the range on.
      {"module_users", nullptr},
  };
  if (cap_ != kUncapped) config["landlock_abi_max"] = cap_;
  return config;
}

std::vector<std::string> SandboxBase::launcher_environment() const {
  return {
      "PATH=/tmp/evil-bin:/usr/local/bin:/usr/bin:/bin",
      kSecret,
      "HOME=/root",
      "TMPDIR=/tmp/evil-tmp",
      "LANG=de_DE.UTF-8",
      "http_proxy=http://evil.example:1",
      "HTTPS_PROXY=http://evil.example:1",
      "NO_PROXY=*",
      "no_proxy=*",
      "ALL_PROXY=socks5://evil.example:1",
      "OARBANK_BROKER=/tmp/evil.sock",
      "LD_LIBRARY_PATH=/tmp/evil-lib",
      "PYTHONPATH=/tmp/evil-py",
      // Issue 12: leases go to the tree, never to the machine's /var/lib/oarbank.
      "OARBANK_USER_REGISTRY=" + tree.path("registry"),
  };
}

nlohmann::json SandboxBase::egress_policy() const {
  auto policy = base_policy();
  policy["net"] = "egress-allowlist";
  policy["egress"] = {"api.example.com:443", "*.githubusercontent.com:443"};
  return policy;
}

RunResult SandboxBase::launch(const nlohmann::json& policy, const std::vector<std::string>& args,
                              const LaunchOptions& options) {
  const std::string policy_file = tree.write_json("policy-" + std::to_string(policy_counter_++) + ".json", policy);
  std::vector<std::string> argv = {OARBANK_AGENT_BINARY, "sandbox-exec", "--config",
                                   options.config.value_or(config_path)};
  for (const auto& entry : options.setenv) {
    argv.push_back("--setenv");
    argv.push_back(entry);
  }
  for (int fd : options.keep_fds) {
    argv.push_back("--keep-fd");
    argv.push_back(std::to_string(fd));
  }
  argv.push_back(policy_file);
  argv.push_back("--");
  if (options.argv.empty()) {
    argv.push_back(tree.probe());
    argv.insert(argv.end(), args.begin(), args.end());
  } else {
    argv.insert(argv.end(), options.argv.begin(), options.argv.end());
  }
  RunOptions run = options.run;
  if (!options.own_env) run.env = launcher_environment();
  return run_command(argv, run);
}

std::string SandboxBase::probe(const nlohmann::json& policy, const std::vector<std::string>& args,
                               const LaunchOptions& options) {
  RunResult r = launch(policy, args, options);
  if (r.exited(0) && r.err.empty()) return r.out_line();
  return r.describe();
}

void SandboxBase::expect_probes(const nlohmann::json& policy, const std::vector<Probe>& probes,
                                const LaunchOptions& options) {
  std::vector<std::string> args = {"batch"};
  for (const auto& probe_item : probes) {
    args.insert(args.end(), probe_item.args.begin(), probe_item.args.end());
    args.emplace_back(",");
  }
  RunResult r = launch(policy, args, options);
  EXPECT_TRUE(r.exited(0) && r.err.empty()) << r.describe();
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < r.out.size()) {
    std::size_t end = r.out.find('\n', start);
    if (end == std::string::npos) end = r.out.size();
    lines.push_back(r.out.substr(start, end - start));
    start = end + 1;
  }
  // Each probe takes as many lines as its expected answer has.
  std::size_t next = 0;
  for (const auto& probe_item : probes) {
    const auto count = static_cast<std::size_t>(std::count(probe_item.expected.begin(), probe_item.expected.end(), '\n')) + 1;
    std::string got;
    for (std::size_t k = 0; k < count; ++k, ++next) {
      got += (k == 0 ? "" : "\n") + (next < lines.size() ? lines[next] : std::string("(no line)"));
    }
    EXPECT_EQ(got, probe_item.expected) << "probe: " << nlohmann::json(probe_item.args).dump();
  }
  EXPECT_EQ(next, lines.size()) << "more output than probes: " << r.describe();
}

void SandboxBase::expect_launcher_failure(const RunResult& r, int code, const std::vector<std::string>& mentions) {
  EXPECT_TRUE(r.exited(code)) << "expected exit " << code << ", got " << r.describe();
  EXPECT_TRUE(r.out.empty()) << "stdout must be empty: " << r.describe();
  EXPECT_EQ(r.err_line_count(), 1U) << "stderr must be exactly one line: " << r.describe();
  EXPECT_TRUE(r.err.starts_with("oarbank-agent sandbox-exec: ")) << r.describe();
  EXPECT_TRUE(r.err.ends_with("\n")) << r.describe();
  for (const auto& mention : mentions) {
    EXPECT_NE(r.err.find(mention), std::string::npos) << "stderr should mention " << mention << ": " << r.describe();
  }
}

bool SandboxBase::runs_or_refused(const nlohmann::json& policy, const std::string& row, int needed_abi) {
  if (abi() >= needed_abi) return true;
  const std::string marker = tree.path("work/ran");
  RunResult r = launch(policy, {"write", marker});
  expect_launcher_failure(r, 70, {"cannot enforce \"" + row + "\"", "needs Landlock ABI " + std::to_string(needed_abi)});
  if (cap_ != kUncapped && cap_ < kernel_landlock_abi()) {
    EXPECT_NE(r.err.find("caps Landlock at ABI " + std::to_string(cap_)), std::string::npos) << r.describe();
  }
  EXPECT_FALSE(exists(marker)) << "the payload ran although the launcher refused";
  return false;
}

std::string cap_name(const ::testing::TestParamInfo<int>& info) {
  return info.param == kUncapped ? "uncapped" : "cap" + std::to_string(info.param);
}

}  // namespace oarbank::it
