// libFuzzer target: the policy, the node configuration and one egress entry, from arbitrary
// bytes. Only the documented errors (PolicyError, ConfigError) may come out; any other
// exception escaping, a crash, a sanitizer report, or an accepted input that does not
// survive its own canonical form is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "policy/egress.hpp"

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "FINDING: %s: %s\n", what, detail.c_str());
  std::abort();
}

void fuzz_policy(std::string_view text) {
  oarbank::Policy policy;
  try {
    policy = oarbank::parse_policy(text);
  } catch (const oarbank::PolicyError& e) {
    // The message names a pointer and a problem, on one line.
    if (e.problem().empty()) finding("empty problem", e.what());
    if (std::string_view(e.what()).find('\n') != std::string_view::npos)
      finding("two-line message", e.what());
    return;
  }
  // Accepted: the canonical form must parse back to the same policy.
  const std::string canonical = oarbank::policy_to_json(policy).dump();
  oarbank::Policy again;
  try {
    again = oarbank::parse_policy(canonical);
  } catch (const oarbank::PolicyError& e) {
    finding("canonical form refused", canonical + " -> " + e.what());
  }
  if (!(again == policy)) finding("canonical form differs", canonical);
}

void fuzz_node_config(std::string_view text) {
  oarbank::NodeConfig config;
  try {
    config = oarbank::parse_node_config(text, "fuzz");
  } catch (const oarbank::ConfigError& e) {
    if (std::string_view(e.what()).find('\n') != std::string_view::npos)
      finding("two-line message", e.what());
    return;
  }
  if (config.module_uid == 0 || config.module_gid == 0)
    finding("uid or gid 0 accepted", std::string(text));
  const std::string canonical = oarbank::node_config_to_json(config).dump();
  oarbank::NodeConfig again;
  try {
    again = oarbank::parse_node_config(canonical, "canonical");
  } catch (const oarbank::ConfigError& e) {
    finding("canonical configuration refused", canonical + " -> " + e.what());
  }
  if (!(again == config)) finding("canonical configuration differs", canonical);
}

void fuzz_egress(std::string_view text) {
  std::string problem;
  auto dest = oarbank::parse_egress_destination(text, problem);
  if (!dest) {
    if (problem.empty()) finding("egress refused without a problem", std::string(text));
    return;
  }
  if (dest->port == 0 || dest->host.empty())
    finding("egress port 0 or empty host", std::string(text));
  const std::string canonical = dest->to_string();
  std::string problem2;
  auto again = oarbank::parse_egress_destination(canonical, problem2);
  if (!again) finding("canonical egress refused", canonical + " -> " + problem2);
  if (!(*again == *dest)) finding("canonical egress differs", canonical);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz_policy(text);
  fuzz_node_config(text);
  if (size <= 1024) fuzz_egress(text);
  return 0;
}
