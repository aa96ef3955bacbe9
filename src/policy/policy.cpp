#include "oarbank/policy.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "policy/egress.hpp"
#include "policy/paths.hpp"
#include "policy/strict_json.hpp"
#include "policy/suggest.hpp"

namespace oarbank {

PolicyError::PolicyError(const std::string& pointer, std::string problem)
    : Error(ErrorKind::InvalidPolicy, std::nullopt, pointer,
            (pointer.empty() ? std::string("(document)") : printable(pointer)) + ": " +
                printable(problem)),
      problem_(std::move(problem)) {}

std::string_view to_string(NetMode mode) {
  switch (mode) {
    case NetMode::None:
      return "none";
    case NetMode::EgressAllowlist:
      return "egress-allowlist";
    case NetMode::EgressAny:
      return "egress-any";
  }
  return "?";
}
std::string_view to_string(GpuMode mode) { return mode == GpuMode::Compute ? "compute" : "none"; }
std::string_view to_string(IpcIsolation isolation) {
  return isolation == IpcIsolation::Required ? "required" : "best-effort";
}

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& pointer, const std::string& problem) {
  throw PolicyError(pointer, problem);
}

void require_type(const json& value, json::value_t type, std::string_view expected,
                  const std::string& pointer) {
  bool ok = value.type() == type;
  if (type == json::value_t::number_integer) ok = value.is_number_integer();
  if (type == json::value_t::number_float) ok = value.is_number();
  if (!ok)
    fail(pointer, std::string("must be ") + std::string(expected) + ", not " +
                      std::string(json_type_name(value)));
}

std::string get_path(const json& value, const std::string& pointer) {
  require_type(value, json::value_t::string, "an absolute path (a string)", pointer);
  std::string problem;
  auto path = normalize_policy_path(value.get_ref<const std::string&>(), problem);
  if (!path) fail(pointer, problem);
  // A policy is the module author's: not the whole file system, nor the kernel's trees.
  if (std::string forbidden = forbidden_policy_path_problem(*path); !forbidden.empty()) {
    fail(pointer, forbidden);
  }
  return *path;
}

// work, data and temp: the module writes the whole tree below, so never a top-level directory
// (policy/paths.hpp, writable_policy_path_problem).
std::string get_writable_path(const json& value, const std::string& pointer) {
  std::string path = get_path(value, pointer);
  if (std::string problem = writable_policy_path_problem(path); !problem.empty()) {
    fail(pointer, problem);
  }
  return path;
}

// Each entry read by `get_one` (get_path, or get_writable_path for data).
std::vector<std::string> get_path_list(const json& value, const std::string& pointer,
                                       std::string (*get_one)(const json&,
                                                              const std::string&) = get_path) {
  require_type(value, json::value_t::array, "a list of absolute paths", pointer);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    out.push_back(get_one(value[i], json_pointer_append(pointer, i)));
  }
  return out;
}

bool get_bool(const json& value, const std::string& pointer) {
  require_type(value, json::value_t::boolean, "true or false", pointer);
  return value.get<bool>();
}

template <typename Enum, std::size_t N>
Enum get_enum(const json& value, const std::string& pointer,
              const std::pair<std::string_view, Enum> (&choices)[N]) {
  std::string expected;
  for (std::size_t i = 0; i < N; ++i) {
    expected +=
        fmt::format("{}\"{}\"", i == 0 ? "" : (i + 1 == N ? " or " : ", "), choices[i].first);
  }
  require_type(value, json::value_t::string, fmt::format("one of {}", expected), pointer);
  const auto& text = value.get_ref<const std::string&>();
  for (const auto& [name, enumerator] : choices) {
    if (text == name) return enumerator;
  }
  fail(pointer, fmt::format("must be {}", expected));
}

// "512Mi", "2Gi", "64Ki", or an integer number of bytes.
std::uint64_t get_memory(const json& value, const std::string& pointer) {
  constexpr std::uint64_t kMax = std::uint64_t{1} << 62;
  std::uint64_t bytes = 0;
  if (value.is_number_unsigned() || value.is_number_integer()) {
    if (value.is_number_integer() && !value.is_number_unsigned() && value.get<std::int64_t>() < 0) {
      fail(pointer, "must be a positive number of bytes");
    }
    bytes = value.get<std::uint64_t>();
  } else if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    std::uint64_t multiplier = 0;
    std::string digits;
    for (auto [suffix, factor] :
         {std::pair{"Ki", 1ULL << 10}, {"Mi", 1ULL << 20}, {"Gi", 1ULL << 30}}) {
      if (text.size() > 2 && text.ends_with(suffix)) {
        multiplier = factor;
        digits = text.substr(0, text.size() - 2);
      }
    }
    if (multiplier == 0)
      fail(pointer, "must be bytes as an integer, or a string like \"512Mi\" (Ki, Mi or Gi)");
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
      fail(pointer, "must be a whole number followed by Ki, Mi or Gi");
    }
    // At most 19 digits fit std::stoull; the product must not wrap around.
    if (auto first = digits.find_first_not_of('0');
        first != std::string::npos && digits.size() - first > 19) {
      fail(pointer, "is more memory than any node has");
    }
    const std::uint64_t number = std::stoull(digits);
    if (number > kMax / multiplier) fail(pointer, "is more memory than any node has");
    bytes = number * multiplier;
  } else {
    fail(pointer, "must be bytes as an integer, or a string like \"512Mi\", not " +
                      std::string(json_type_name(value)));
  }
  if (bytes == 0) fail(pointer, "must be more than 0 bytes");
  if (bytes > kMax) fail(pointer, "is more memory than any node has");
  return bytes;
}

double get_cpu(const json& value, const std::string& pointer) {
  if (!value.is_number())
    fail(pointer, "must be a number of CPUs, not " + std::string(json_type_name(value)));
  double cpus = value.get<double>();
  // cpu.max takes a quota of at least 1 ms per 100 ms period.
  if (!std::isfinite(cpus) || cpus < 0.01) fail(pointer, "must be at least 0.01 CPUs");
  if (cpus > 65536) fail(pointer, "is more CPUs than any node has");
  return cpus;
}

void require_object(const json& value, const std::string& pointer,
                    std::initializer_list<std::string_view> known) {
  require_type(value, json::value_t::object, "an object", pointer);
  for (const auto& [key, member] : value.items()) {
    bool found = false;
    for (auto name : known) found = found || key == name;
    if (!found) {
      const std::vector<std::string> names(known.begin(), known.end());
      fail(json_pointer_append(pointer, key), "unknown field" + did_you_mean(key, names));
    }
  }
}

}  // namespace

Policy policy_from_json(const json& document) {
  require_object(document, "",
                 {"version", "bundle", "runtime", "tools", "work", "data", "temp", "exec_writable",
                  "net", "egress", "broker", "devices", "reservations", "ipc_isolation"});
  Policy policy;
  if (auto it = document.find("version"); it != document.end()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() != 1) {
      fail("/version", "must be 1 (the only schema version this agent knows)");
    }
  }
  auto bundle = document.find("bundle");
  if (bundle == document.end()) fail("/bundle", "is required");
  policy.bundle = get_path(*bundle, "/bundle");
  if (auto it = document.find("runtime"); it != document.end())
    policy.runtime = get_path_list(*it, "/runtime");
  if (auto it = document.find("tools"); it != document.end())
    policy.tools = get_path_list(*it, "/tools");
  if (auto it = document.find("work"); it != document.end()) {
    policy.work = get_writable_path(*it, "/work");
  }
  if (auto it = document.find("data"); it != document.end()) {
    policy.data = get_path_list(*it, "/data", get_writable_path);
  }
  if (auto it = document.find("temp"); it != document.end()) {
    policy.temp = get_writable_path(*it, "/temp");
  }
  if (auto it = document.find("exec_writable"); it != document.end()) {
    policy.exec_writable = get_bool(*it, "/exec_writable");
  }
  if (auto it = document.find("net"); it != document.end()) {
    static constexpr std::pair<std::string_view, NetMode> kNet[] = {
        {"none", NetMode::None},
        {"egress-allowlist", NetMode::EgressAllowlist},
        {"egress-any", NetMode::EgressAny}};
    policy.net = get_enum(*it, "/net", kNet);
  }
  if (auto it = document.find("egress"); it != document.end()) {
    require_type(*it, json::value_t::array, "a list of \"host:port\" strings", "/egress");
    if (!it->empty() && policy.net != NetMode::EgressAllowlist) {
      fail("/egress", "is only allowed with \"net\": \"egress-allowlist\"");
    }
    std::set<std::string> seen;
    for (std::size_t i = 0; i < it->size(); ++i) {
      const auto pointer = json_pointer_append("/egress", i);
      require_type((*it)[i], json::value_t::string, "a \"host:port\" string", pointer);
      std::string problem;
      auto dest = parse_egress_destination((*it)[i].get_ref<const std::string&>(), problem);
      if (!dest) fail(pointer, problem);
      if (!seen.insert(dest->to_string()).second) fail(pointer, "duplicate destination");
      policy.egress.push_back(*dest);
    }
  }
  if (auto it = document.find("broker"); it != document.end())
    policy.broker = get_bool(*it, "/broker");
  if (auto it = document.find("devices"); it != document.end()) {
    require_object(*it, "/devices", {"gpu"});
    if (auto gpu = it->find("gpu"); gpu != it->end()) {
      static constexpr std::pair<std::string_view, GpuMode> kGpu[] = {
          {"none", GpuMode::None}, {"compute", GpuMode::Compute}};
      policy.gpu = get_enum(*gpu, "/devices/gpu", kGpu);
    }
  }
  if (auto it = document.find("reservations"); it != document.end()) {
    require_object(*it, "/reservations", {"cpu", "memory"});
    if (auto cpu = it->find("cpu"); cpu != it->end())
      policy.reservations.cpu = get_cpu(*cpu, "/reservations/cpu");
    if (auto mem = it->find("memory"); mem != it->end()) {
      policy.reservations.memory_bytes = get_memory(*mem, "/reservations/memory");
    }
  }
  if (auto it = document.find("ipc_isolation"); it != document.end()) {
    static constexpr std::pair<std::string_view, IpcIsolation> kIpc[] = {
        {"required", IpcIsolation::Required}, {"best-effort", IpcIsolation::BestEffort}};
    policy.ipc_isolation = get_enum(*it, "/ipc_isolation", kIpc);
  }
  return policy;
}

Policy parse_policy(std::string_view text) {
  json document;
  StrictJsonError error;
  if (!parse_strict_json(text, kMaxPolicyBytes, kMaxPolicyDepth, document, error)) {
    throw PolicyError(error.pointer, error.problem);
  }
  return policy_from_json(document);
}

Policy load_policy_file(const std::string& path) {
  std::string text;
  std::string problem;
  // Issue 16: "-" is standard input, read to its end (a pipe or a file; what is left for the
  // module on that descriptor is nothing).
  const bool ok = path == "-" ? read_small_fd(0, "standard input", kMaxPolicyBytes, text, problem)
                              : read_small_file(path, kMaxPolicyBytes, text, problem);
  if (!ok) throw PolicyError("", problem);
  return parse_policy(text);
}

json policy_to_json(const Policy& policy) {
  json egress = json::array();
  for (const auto& dest : policy.egress) egress.push_back(dest.to_string());
  json reservations = json::object();
  if (policy.reservations.cpu) reservations["cpu"] = *policy.reservations.cpu;
  if (policy.reservations.memory_bytes) reservations["memory"] = *policy.reservations.memory_bytes;
  json out = {
      {"version", policy.version},    {"bundle", policy.bundle},
      {"runtime", policy.runtime},    {"tools", policy.tools},
      {"data", policy.data},          {"exec_writable", policy.exec_writable},
      {"net", to_string(policy.net)}, {"egress", egress},
      {"broker", policy.broker},      {"devices", {{"gpu", to_string(policy.gpu)}}},
      {"reservations", reservations}, {"ipc_isolation", to_string(policy.ipc_isolation)},
  };
  if (policy.work) out["work"] = *policy.work;
  if (policy.temp) out["temp"] = *policy.temp;
  return out;
}

}  // namespace oarbank
