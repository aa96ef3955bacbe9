// What the plan's unit tests share (plan_test.cpp, the mechanisms' tests): a node's paths as a
// map, the facts of a node per Landlock ABI, an egress policy, a request, the golden files.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "plan/plan.hpp"

namespace oarbank::plan_fixtures {

class FakePaths : public PathOracle {
 public:
  FakePaths() {
    for (const auto& path : base_read_execute_paths()) kinds_[path] = PathKind::Directory;
    kinds_.erase("/lib32");  // missing on this imaginary node: skipped silently
    for (const auto& path : base_device_paths()) kinds_[path] = PathKind::File;
    for (const char* dir :
         {"/srv/mod", "/opt/python", "/jobs/1/work", "/jobs/1/tmp", "/datasets/a", "/dev/dri"}) {
      kinds_[dir] = PathKind::Directory;
    }
    for (const char* file : {"/usr/bin/ffmpeg", "/dev/nvidia0"}) kinds_[file] = PathKind::File;
  }
  [[nodiscard]] PathKind kind(const std::string& path) const override {
    auto it = kinds_.find(path);
    return it == kinds_.end() ? PathKind::Missing : it->second;
  }
  [[nodiscard]] std::string canonical(const std::string& path) const override {
    auto it = links_.find(path);
    return it == links_.end() ? path : it->second;
  }
  std::map<std::string, std::string> links_;
  std::map<std::string, PathKind> kinds_;
};

inline KernelFeatures features_with_abi(int abi) {
  KernelFeatures features;
  features.kernel_release = "golden";
  features.landlock = abi > 0 ? LandlockState::Present : LandlockState::NotBuilt;
  features.landlock_abi = abi;
  features.seccomp_filter = true;
  features.running_as_root = true;
  features.gpu_device_nodes = {"/dev/dri", "/dev/nvidia0"};
  features.network_namespaces_probed = true;
  features.network_namespaces = true;
  return features;
}

inline Policy egress_policy() {
  return parse_policy(R"({
    "bundle": "/srv/mod", "work": "/jobs/1/work", "temp": "/jobs/1/tmp", "exec_writable": true,
    "net": "egress-allowlist", "egress": ["api.example.com:443", "*.example.org:443"],
    "broker": true})");
}

inline LaunchRequest request() {
  LaunchRequest r;
  r.argv = {"/srv/mod/run", "--flag"};
  r.setenv = {{"MODULE_ID", "7f3a"}};
  r.keep_fds = {5};
  return r;
}

inline void check_golden(const std::string& name, const nlohmann::json& actual) {
  const std::string path = std::string(OARBANK_GOLDEN_DIR) + "/" + name + ".json";
  const std::string text = actual.dump(2) + "\n";
  if (const char* update = std::getenv("OARBANK_UPDATE_GOLDEN");
      update != nullptr && *update == '1') {
    std::ofstream(path) << text;
    return;
  }
  std::ifstream file(path);
  ASSERT_TRUE(file) << "missing golden file " << path << " (run with OARBANK_UPDATE_GOLDEN=1)";
  std::stringstream expected;
  expected << file.rdbuf();
  EXPECT_EQ(expected.str(), text) << "golden file " << path
                                  << " differs (if intended, run with OARBANK_UPDATE_GOLDEN=1)";
}

}  // namespace oarbank::plan_fixtures
