// The fixture every integration test uses: a sandbox tree, a stand-in proxy listener, a node
// configuration (optionally capping the Landlock ABI), and helpers that launch the real
// `oarbank-agent sandbox-exec` with the probe payload inside.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness.hpp"

namespace oarbank::it {

inline constexpr int kUncapped = -1;

// The secret the launcher's own environment holds; the module must never see it.
inline constexpr const char* kSecret = "SECRET_TOKEN=hunter2-do-not-leak";

struct LaunchOptions {
  std::vector<std::string> setenv;    // --setenv
  std::vector<int> keep_fds;          // --keep-fd
  std::optional<std::string> config;  // --config FILE (default: the fixture's)
  std::vector<std::string> argv;      // the module's argv (default: the payload + args)
  RunOptions run;                     // env is replaced by launcher_environment() unless set
  bool own_env = false;               // use run.env as given
};

// One sub-command of the payload and the exact line it must print.
struct Probe {
  std::vector<std::string> args;
  std::string expected;
};

class SandboxBase {
 protected:
  SandboxBase() = default;
  void init(int cap);

  // The node configuration for this test: proxy_listen on the stand-in proxy, the broker
  // socket inside the tree, and landlock_abi_max unless uncapped.
  [[nodiscard]] nlohmann::json node_config() const;
  // What the launcher's caller has in its environment: hostile values for everything the
  // sandbox sets, plus a secret.
  [[nodiscard]] std::vector<std::string> launcher_environment() const;

  // oarbank-agent sandbox-exec --config C [opts] POLICY -- PAYLOAD ARGS...
  RunResult launch(const nlohmann::json& policy, const std::vector<std::string>& args,
                   const LaunchOptions& options = {});
  // The payload's one-line answer ("ok", "errno EACCES"), or a description of what else
  // happened (a launcher failure, a signal, stderr output) so that assertions show it.
  std::string probe(const nlohmann::json& policy, const std::vector<std::string>& args,
                    const LaunchOptions& options = {});

  // Runs the sub-commands in turn in ONE sandboxed payload process ("batch") and expects
  // exactly the given line from each. Only for sub-commands that print one line.
  void expect_probes(const nlohmann::json& policy, const std::vector<Probe>& probes,
                     const LaunchOptions& options = {});

  // A launcher failure: `code`, nothing on stdout, exactly one line on stderr starting with
  // "oarbank-agent sandbox-exec: " and mentioning each of `mentions`.
  static void expect_launcher_failure(const RunResult& r, int code,
                                      const std::vector<std::string>& mentions);

  // True when this node (under the cap) enforces the row; otherwise asserts the launcher
  // refuses the policy with 70 naming the row, before the payload runs, and returns false.
  bool runs_or_refused(const nlohmann::json& policy, const std::string& row, int needed_abi);

  [[nodiscard]] int cap() const { return cap_; }
  [[nodiscard]] int abi() const { return effective_abi(cap_); }

  [[nodiscard]] nlohmann::json base_policy() const { return tree.base_policy(); }
  [[nodiscard]] nlohmann::json egress_policy() const;
  static nlohmann::json with(nlohmann::json policy, const std::string& key, nlohmann::json value) {
    policy[key] = std::move(value);
    return policy;
  }

  SandboxTree tree;
  TcpListener proxy;
  std::string broker_path;
  std::string config_path;

 private:
  int cap_ = kUncapped;
  int policy_counter_ = 0;
};

// Value-parameterized: the parameter is the node's landlock_abi_max (kUncapped: none).
class CapTest : public SandboxBase, public ::testing::TestWithParam<int> {
 protected:
  CapTest() { init(GetParam()); }
};

// Plain: the node uncapped.
class UncappedTest : public SandboxBase, public ::testing::Test {
 protected:
  UncappedTest() { init(kUncapped); }
};

std::string cap_name(const ::testing::TestParamInfo<int>& info);

}  // namespace oarbank::it

// Caps 3, 4, 5, 6 and uncapped (the kernel's own ABI, 7 on the reference machine).
#define OARBANK_INSTANTIATE_CAPS(Suite)                                             \
  INSTANTIATE_TEST_SUITE_P(LandlockCap, Suite,                                      \
                           ::testing::Values(3, 4, 5, 6, ::oarbank::it::kUncapped), \
                           ::oarbank::it::cap_name)
