// The SDK's Policy: what a module asks of the sandbox. Public header: any C++ module tool can
// include it (it needs nlohmann-json) to read, write and validate a policy.
//
// JSON form and every field's meaning: docs/policy.md (contract.md, "The Policy").
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sys/error.hpp"

namespace oarbank {

enum class NetMode { None, EgressAllowlist, EgressAny };
enum class GpuMode { None, Compute };
enum class IpcIsolation { Required, BestEffort };

// One entry of `egress`: "api.example.com:443", "*.example.com:443", "192.0.2.7:80",
// "[2001:db8::1]:443". Hosts are stored lower-case without a trailing dot.
struct EgressDestination {
  std::string host;  // without the "*." prefix and without brackets
  std::uint16_t port = 0;
  bool any_subdomain = false;  // "*.example.com": subdomains only, not the apex
  bool is_ip = false;          // an IPv4 or IPv6 literal
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const EgressDestination&, const EgressDestination&) = default;
};

struct Reservations {
  std::optional<double> cpu;                  // CPUs, > 0
  std::optional<std::uint64_t> memory_bytes;  // bytes, > 0
  friend bool operator==(const Reservations&, const Reservations&) = default;
};

struct Policy {
  int version = 1;
  std::string bundle;
  std::vector<std::string> runtime;
  std::vector<std::string> tools;
  std::optional<std::string> work;
  std::vector<std::string> data;
  std::optional<std::string> temp;
  bool exec_writable = false;
  NetMode net = NetMode::None;
  std::vector<EgressDestination> egress;
  bool broker = false;
  GpuMode gpu = GpuMode::None;
  Reservations reservations;
  IpcIsolation ipc_isolation = IpcIsolation::Required;
  friend bool operator==(const Policy&, const Policy&) = default;
};

// An invalid policy: an Error of kind InvalidPolicy (sys/error.hpp) whose where() is the
// JSON Pointer of the offending value ("" for the whole document); `problem` says what is
// wrong; what() is "POINTER: PROBLEM".
class PolicyError : public Error {
 public:
  PolicyError(const std::string& pointer, std::string problem);
  [[nodiscard]] const std::string& pointer() const { return where(); }
  [[nodiscard]] const std::string& problem() const { return problem_; }

 private:
  std::string problem_;
};

// Largest policy document accepted, and deepest nesting: far above any real policy, low
// enough that a hostile document cannot exhaust memory or the stack.
inline constexpr std::size_t kMaxPolicyBytes = 1 << 20;
inline constexpr int kMaxPolicyDepth = 16;

// Parses and validates a policy document (UTF-8 JSON text). Throws PolicyError.
Policy parse_policy(std::string_view text);

// Reads and parses a policy file ("-": standard input, to its end). Throws PolicyError
// (pointer "") if unreadable.
Policy load_policy_file(const std::string& path);

// Validates an already parsed JSON value (duplicate keys cannot be seen at this level).
Policy policy_from_json(const nlohmann::json& document);

// The canonical JSON form, every field present.
nlohmann::json policy_to_json(const Policy& policy);

std::string_view to_string(NetMode mode);
std::string_view to_string(GpuMode mode);
std::string_view to_string(IpcIsolation isolation);

}  // namespace oarbank
