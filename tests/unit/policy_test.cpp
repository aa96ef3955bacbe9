// The Policy: parsing the contract's example, defaults, the canonical form, and the invalid
// policies (each with the exact JSON Pointer and what is wrong).
#include "oarbank/policy.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace oarbank {
namespace {

using nlohmann::json;
using namespace std::string_literals;

// The example of docs/policy.md, verbatim.
constexpr std::string_view kExamplePolicy = R"({
  "version": 1,
  "bundle": "/srv/oarbank/modules/resize-1.4.2",
  "runtime": ["/opt/python-3.12"],
  "tools": ["/usr/bin/ffmpeg"],
  "work": "/var/lib/oarbank/jobs/7f3a/work",
  "data": ["/var/lib/oarbank/datasets/images"],
  "temp": "/var/lib/oarbank/jobs/7f3a/tmp",
  "exec_writable": false,
  "net": "egress-allowlist",
  "egress": ["api.example.com:443", "*.githubusercontent.com:443"],
  "broker": false,
  "devices": { "gpu": "none" },
  "reservations": { "cpu": 1.5, "memory": "512Mi" },
  "ipc_isolation": "required"
})";

TEST(Policy, ContractExampleParses) {
  const Policy p = parse_policy(kExamplePolicy);
  EXPECT_EQ(p.version, 1);
  EXPECT_EQ(p.bundle, "/srv/oarbank/modules/resize-1.4.2");
  EXPECT_EQ(p.runtime, std::vector<std::string>{"/opt/python-3.12"});
  EXPECT_EQ(p.tools, std::vector<std::string>{"/usr/bin/ffmpeg"});
  EXPECT_EQ(p.work, "/var/lib/oarbank/jobs/7f3a/work");
  EXPECT_EQ(p.data, std::vector<std::string>{"/var/lib/oarbank/datasets/images"});
  EXPECT_EQ(p.temp, "/var/lib/oarbank/jobs/7f3a/tmp");
  EXPECT_FALSE(p.exec_writable);
  EXPECT_EQ(p.net, NetMode::EgressAllowlist);
  ASSERT_EQ(p.egress.size(), 2U);
  EXPECT_EQ(p.egress[0].host, "api.example.com");
  EXPECT_EQ(p.egress[0].port, 443);
  EXPECT_FALSE(p.egress[0].any_subdomain);
  EXPECT_FALSE(p.egress[0].is_ip);
  EXPECT_EQ(p.egress[1].host, "githubusercontent.com");
  EXPECT_EQ(p.egress[1].port, 443);
  EXPECT_TRUE(p.egress[1].any_subdomain);
  EXPECT_FALSE(p.egress[1].is_ip);
  EXPECT_FALSE(p.broker);
  EXPECT_EQ(p.gpu, GpuMode::None);
  ASSERT_TRUE(p.reservations.cpu.has_value());
  EXPECT_DOUBLE_EQ(*p.reservations.cpu, 1.5);
  EXPECT_EQ(p.reservations.memory_bytes, std::uint64_t{512} * 1024 * 1024);
  EXPECT_EQ(p.ipc_isolation, IpcIsolation::Required);
}

TEST(Policy, OnlyBundleGivesEveryDefault) {
  const Policy p = parse_policy(R"({"bundle": "/srv/m"})");
  EXPECT_EQ(p.version, 1);
  EXPECT_EQ(p.bundle, "/srv/m");
  EXPECT_TRUE(p.runtime.empty());
  EXPECT_TRUE(p.tools.empty());
  EXPECT_FALSE(p.work.has_value());
  EXPECT_TRUE(p.data.empty());
  EXPECT_FALSE(p.temp.has_value());
  EXPECT_FALSE(p.exec_writable);
  EXPECT_EQ(p.net, NetMode::None);
  EXPECT_TRUE(p.egress.empty());
  EXPECT_FALSE(p.broker);
  EXPECT_EQ(p.gpu, GpuMode::None);
  EXPECT_FALSE(p.reservations.cpu.has_value());
  EXPECT_FALSE(p.reservations.memory_bytes.has_value());
  EXPECT_EQ(p.ipc_isolation, IpcIsolation::Required);

  Policy expected;
  expected.bundle = "/srv/m";
  EXPECT_EQ(p, expected);
  // Empty objects and lists are the defaults too.
  EXPECT_EQ(parse_policy(R"({"bundle": "/srv/m", "devices": {}, "reservations": {}, "runtime": [],
                             "tools": [], "data": [], "egress": []})"),
            expected);
}

TEST(Policy, EveryAlternativeValue) {
  const Policy p = parse_policy(R"({
    "bundle": "/srv/m/", "exec_writable": true, "broker": true, "net": "egress-any",
    "devices": {"gpu": "compute"}, "ipc_isolation": "best-effort",
    "reservations": {"cpu": 2, "memory": 1048576}, "runtime": ["/opt/a/", "/opt/b"]})");
  EXPECT_EQ(p.bundle, "/srv/m");  // one trailing slash dropped
  EXPECT_EQ(p.runtime, (std::vector<std::string>{"/opt/a", "/opt/b"}));
  EXPECT_TRUE(p.exec_writable);
  EXPECT_TRUE(p.broker);
  EXPECT_EQ(p.net, NetMode::EgressAny);
  EXPECT_EQ(p.gpu, GpuMode::Compute);
  EXPECT_EQ(p.ipc_isolation, IpcIsolation::BestEffort);
  EXPECT_EQ(p.reservations.cpu, 2.0);
  EXPECT_EQ(p.reservations.memory_bytes, 1048576U);
  EXPECT_EQ(parse_policy(R"({"bundle": "/m", "net": "none"})").net, NetMode::None);
  EXPECT_EQ(parse_policy(R"({"bundle": "/m", "net": "egress-allowlist"})").net,
            NetMode::EgressAllowlist);
}

// Non-ASCII that is no control character stays a path (the C1 controls are refused, below).
TEST(Policy, NonAsciiPathsThatAreNoControlsParse) {
  const Policy p = parse_policy(R"({"bundle": "/srv/caf\u00e9", "work": "/srv/w\u00a0x"})");
  EXPECT_EQ(p.bundle, "/srv/caf\xc3\xa9");
  EXPECT_EQ(*p.work, "/srv/w\xc2\xa0x");
}

TEST(Policy, MemoryForms) {
  auto memory = [](const std::string& value) {
    return parse_policy(R"({"bundle": "/m", "reservations": {"memory": )" + value + "}}")
        .reservations.memory_bytes.value();
  };
  EXPECT_EQ(memory("1"), 1U);
  EXPECT_EQ(memory(R"("64Ki")"), 64U << 10);
  EXPECT_EQ(memory(R"("512Mi")"), 512U << 20);
  EXPECT_EQ(memory(R"("2Gi")"), std::uint64_t{2} << 30);
  EXPECT_EQ(memory(R"("0001Mi")"), std::uint64_t{1} << 20);
  // The largest accepted: 2^62 bytes, as an integer and as Gi.
  EXPECT_EQ(memory("4611686018427387904"), std::uint64_t{1} << 62);
  EXPECT_EQ(memory(R"("4294967296Gi")"), std::uint64_t{1} << 62);
}

TEST(Policy, CpuBounds) {
  auto cpu = [](const std::string& value) {
    return parse_policy(R"({"bundle": "/m", "reservations": {"cpu": )" + value + "}}")
        .reservations.cpu.value();
  };
  EXPECT_DOUBLE_EQ(cpu("0.01"), 0.01);
  EXPECT_DOUBLE_EQ(cpu("65536"), 65536.0);
  EXPECT_DOUBLE_EQ(cpu("1e1"), 10.0);
}

TEST(Policy, EgressEntriesAreNormalised) {
  const Policy p = parse_policy(R"({"bundle": "/m", "net": "egress-allowlist",
    "egress": ["API.Example.COM.:443", "[2001:DB8:0:0::1]:8443", "192.0.2.7:80"]})");
  ASSERT_EQ(p.egress.size(), 3U);
  EXPECT_EQ(p.egress[0].to_string(), "api.example.com:443");
  EXPECT_EQ(p.egress[1].to_string(), "[2001:db8::1]:8443");
  EXPECT_TRUE(p.egress[1].is_ip);
  EXPECT_EQ(p.egress[2].to_string(), "192.0.2.7:80");
  EXPECT_TRUE(p.egress[2].is_ip);
  // The apex and its subdomains are different destinations.
  EXPECT_EQ(parse_policy(R"({"bundle": "/m", "net": "egress-allowlist",
    "egress": ["example.com:443", "*.example.com:443", "example.com:80"]})")
                .egress.size(),
            3U);
}

TEST(Policy, RoundTripThroughCanonicalJson) {
  const std::vector<std::string> documents = {
      std::string(kExamplePolicy),
      R"({"bundle": "/m"})",
      R"({"bundle": "/srv/m/", "exec_writable": true, "broker": true, "net": "egress-any",
          "devices": {"gpu": "compute"}, "ipc_isolation": "best-effort",
          "reservations": {"cpu": 0.3333333333333333, "memory": 12345}, "data": ["/srv/d1", "/srv/d2"]})",
      R"({"bundle": "/m", "net": "egress-allowlist", "reservations": {"cpu": 2},
          "egress": ["Example.com.:1", "[::FFFF:192.0.2.1]:65535", "10.0.0.1:8080", "*.a-b.c:443"]})",
      R"({"bundle": "/m", "work": "/srv/w", "temp": "/srv/t", "reservations": {"memory": "3Gi"}})",
  };
  for (const auto& text : documents) {
    SCOPED_TRACE(text);
    const Policy first = parse_policy(text);
    const json canonical = policy_to_json(first);
    // Every field present (work and temp only when set).
    for (const char* key : {"version", "bundle", "runtime", "tools", "data", "exec_writable", "net",
                            "egress", "broker", "devices", "reservations", "ipc_isolation"}) {
      EXPECT_TRUE(canonical.contains(key)) << key;
    }
    EXPECT_EQ(policy_from_json(canonical), first);
    EXPECT_EQ(parse_policy(canonical.dump()), first);
    EXPECT_EQ(parse_policy(canonical.dump(2)), first);
    // The canonical form is a fixed point.
    EXPECT_EQ(policy_to_json(parse_policy(canonical.dump())), canonical);
  }
}

TEST(Policy, ErrorMessageFormat) {
  try {
    parse_policy(
        R"({"bundle": "/m", "net": "egress-allowlist", "egress": ["a.com:443", "b.com"]})");
    FAIL() << "accepted";
  } catch (const PolicyError& e) {
    EXPECT_EQ(e.pointer(), "/egress/1");
    EXPECT_EQ(std::string(e.what()), "/egress/1: " + e.problem());
  }
  try {
    parse_policy("[]");
    FAIL() << "accepted";
  } catch (const PolicyError& e) {
    EXPECT_EQ(e.pointer(), "");
    EXPECT_EQ(std::string(e.what()), "(document): " + e.problem());
  }
  // One line: no newline in any message (the CLI prints it as one line on stderr).
  try {
    parse_policy("{\n\"bundle\":\n");
    FAIL() << "accepted";
  } catch (const PolicyError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

TEST(Policy, ControlCharactersInAKeyDoNotBreakTheLine) {
  try {
    parse_policy(R"({"bundle": "/m", "a\nb\u001b[2J": 1})");
    FAIL() << "accepted";
  } catch (const PolicyError& e) {
    EXPECT_EQ(e.pointer(), "/a\nb\x1b[2J");  // the pointer itself is exact
    EXPECT_EQ(std::string(e.what()), "/a\\u000ab\\u001b[2J: unknown field");
  }
}

TEST(Policy, ExactlyTheSizeLimitIsAccepted) {
  std::string text = R"({"bundle": "/m"})";
  text.append(kMaxPolicyBytes - text.size(), ' ');
  ASSERT_EQ(text.size(), kMaxPolicyBytes);
  EXPECT_EQ(parse_policy(text).bundle, "/m");
}

TEST(Policy, ExactlyTheDepthLimitReachesValidation) {
  // 16 levels: the top object, "runtime", and 14 nested arrays. The strict reader lets it
  // through; the field's check refuses it.
  std::string text = R"({"bundle": "/m", "runtime": )";
  text += std::string(15, '[') + std::string(15, ']') + "}";
  try {
    parse_policy(text);
    FAIL() << "accepted";
  } catch (const PolicyError& e) {
    EXPECT_EQ(e.pointer(), "/runtime/0");
    EXPECT_NE(e.problem().find("not an array"), std::string::npos) << e.problem();
  }
}

TEST(Policy, LoadPolicyFileErrors) {
  try {
    load_policy_file("/nonexistent/oarbank/policy.json");
    FAIL() << "accepted";
  } catch (const PolicyError& e) {
    EXPECT_EQ(e.pointer(), "");
    EXPECT_NE(e.problem().find("/nonexistent/oarbank/policy.json"), std::string::npos);
  }
  try {
    load_policy_file("/");
    FAIL() << "accepted";
  } catch (const PolicyError& e) {
    EXPECT_EQ(e.pointer(), "");
    EXPECT_NE(e.problem().find("not a regular file"), std::string::npos) << e.problem();
  }
}

// ---- Invalid policies ------------------------------------------------------------------

struct InvalidCase {
  std::string name;
  std::string text;
  std::string pointer;
  std::string problem;  // a substring of PolicyError::problem()
};

void PrintTo(const InvalidCase& c, std::ostream* os) { *os << c.name; }

// A valid policy with `extra` members added (text, inside the top-level object).
std::string with(const std::string& extra) { return R"({"bundle": "/srv/m", )" + extra + "}"; }
// A policy with net egress-allowlist and the given egress list.
std::string egress(const std::string& list) {
  return with(R"("net": "egress-allowlist", "egress": [)" + list + "]");
}
std::string memory(const std::string& value) {
  return with(R"("reservations": {"memory": )" + value + "}");
}
std::string cpu(const std::string& value) {
  return with(R"("reservations": {"cpu": )" + value + "}");
}

std::string nested_arrays(std::size_t n) { return std::string(n, '[') + std::string(n, ']'); }
std::string zeros(std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += "/0";
  return out;
}

std::vector<InvalidCase> invalid_cases() {
  const std::string label64(64, 'a');
  const std::string long_host = std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                                std::string(63, 'c') + "." + std::string(63, 'd');  // 255
  const std::string over_limit = R"({"bundle": "/m"})" + std::string(kMaxPolicyBytes, ' ');
  std::vector<InvalidCase> cases = {
      // Malformed JSON: the whole document.
      {"Truncated", R"({"version": 1, "bundle": "/m")", "", "malformed JSON"},
      {"TruncatedInString", R"({"bundle": "/m)", "", "malformed JSON"},
      {"Empty", "", "", "malformed JSON"},
      {"OnlyWhitespace", " \n\t ", "", "malformed JSON"},
      {"TrailingGarbage", R"({"bundle": "/m"} x)", "", "malformed JSON"},
      {"TwoDocuments", R"({"bundle": "/m"}{"bundle": "/m"})", "", "malformed JSON"},
      // Issue 16: a trailing comma and a comment are named as such, where they are.
      {"TrailingComma", R"({"bundle": "/m",})", "",
       "malformed JSON: a trailing comma at line 1, column 16: JSON allows no comma after the "
       "last member of an object"},
      {"TrailingCommaInArray", "{\"bundle\": \"/m\",\n \"data\": [\"/a\",\n  ]}", "",
       "malformed JSON: a trailing comma at line 2, column 15: JSON allows no comma after the "
       "last element of an array"},
      {"CommaInStringIsNotTrailing", "{\"bundle\": \"/m,}\",}", "",
       "malformed JSON: a trailing comma at line 1, column 18"},
      {"BlockComment", R"({"bundle": "/m" /* the module */})", "",
       "malformed JSON: a comment at line 1, column 17: JSON has no comments"},
      {"LineComment", "// policy\n{\"bundle\": \"/m\"}", "",
       "malformed JSON: a comment at line 1, column 1: JSON has no comments"},
      {"LineCommentAfterMember", "{\"bundle\": \"/m\", // the module\n \"version\": 1}", "",
       "malformed JSON: a comment at line 1, column 18: JSON has no comments"},
      {"SlashesInStringAreNoComment", R"({"bundle": "//m" x})", "",
       "malformed JSON: parse error at line 1"},
      {"SingleQuotes", R"({'bundle': '/m'})", "", "malformed JSON"},
      {"NulThenGarbage", "{\"bundle\": \"/m\"}\0garbage"s, "", "NUL byte at offset 16"},
      {"RawNulInString", "{\"bundle\": \"/m\0\"}"s, "", "NUL byte"},
      {"InvalidUtf8Byte", "{\"bundle\": \"/m\xff\"}", "", "UTF-8"},
      {"OverlongUtf8", "{\"bundle\": \"/m\xc0\xaf\"}", "", "UTF-8"},
      {"TruncatedUtf8", "{\"bundle\": \"/m\xe2\x82\"}", "", "UTF-8"},
      {"InvalidUtf8InKey", "{\"bundle\": \"/m\", \"\xfe\": 1}", "", "UTF-8"},
      {"LoneSurrogateEscape", R"({"bundle": "/m\ud800"})", "", "surrogate"},
      {"RawControlCharInString", "{\"bundle\": \"/m\tx\"}", "", "malformed JSON"},
      {"NumberOverflow", cpu("1e400"), "", "number overflow"},
      {"TooLarge", over_limit, "", "more than the limit of 1048576"},
      {"DeepArraysAtTop", std::string(10000, '['), zeros(16), "nested deeper than 16 levels"},
      {"DeepArraysInField", with(R"("runtime": )" + nested_arrays(10000)), "/runtime" + zeros(15),
       "nested deeper than 16 levels"},
      {"DeepObjects",
       [] {
         std::string t;
         for (int i = 0; i < 10000; ++i) t += R"({"a":)";
         return t;
       }(),
       [] {
         std::string p;
         for (int i = 0; i < 16; ++i) p += "/a";
         return p;
       }(),
       "nested deeper than 16 levels"},
      // Issue 16: an unknown field gets the closest known one, when one is close.
      {"UnknownFieldNearEgress", with(R"("egres": [])"), "/egres",
       "unknown field; did you mean \"egress\"?"},
      {"UnknownFieldNearGpu", with(R"("devices": {"gpus": "none"})"), "/devices/gpus",
       "unknown field; did you mean \"gpu\"?"},
      // Not an object at the top.
      {"TopArray", "[]", "", "must be an object, not an array"},
      {"TopString", R"("/srv/m")", "", "must be an object, not a string"},
      {"TopNull", "null", "", "must be an object, not null"},
      {"TopNumber", "1", "", "must be an object, not an integer"},
      // Unknown fields.
      {"UnknownTopLevel", with(R"("network": "none")"), "/network", "unknown field"},
      {"UnknownEscapedKey", with(R"("a/b~c": 1)"), "/a~1b~0c", "unknown field"},
      {"UnknownCaseVariant", with(R"("Bundle": "/m")"), "/Bundle", "unknown field"},
      {"UnknownInDevices", with(R"("devices": {"gpu": "none", "tpu": "all"})"), "/devices/tpu",
       "unknown field"},
      {"UnknownInReservations", with(R"("reservations": {"cpu": 1, "disk": "1Gi"})"),
       "/reservations/disk", "unknown field"},
      // Duplicate keys.
      {"DuplicateTopLevel", R"({"bundle": "/a", "bundle": "/b"})", "/bundle", "duplicate key"},
      {"DuplicateAfterOthers", with(R"("net": "none", "broker": false, "net": "none")"), "/net",
       "duplicate key"},
      {"DuplicateInDevices", with(R"("devices": {"gpu": "none", "gpu": "compute"})"),
       "/devices/gpu", "duplicate key"},
      {"DuplicateInReservations", with(R"("reservations": {"cpu": 1, "memory": 1, "cpu": 2})"),
       "/reservations/cpu", "duplicate key"},
      {"DuplicateInsideArray", with(R"("runtime": ["/a", {"x": 1, "x": 2}])"), "/runtime/1/x",
       "duplicate key"},
      // version.
      {"Version2", with(R"("version": 2)"), "/version", "must be 1"},
      {"Version0", with(R"("version": 0)"), "/version", "must be 1"},
      {"VersionNegative", with(R"("version": -1)"), "/version", "must be 1"},
      {"VersionString", with(R"("version": "1")"), "/version", "must be 1"},
      {"VersionFloat", with(R"("version": 1.0)"), "/version", "must be 1"},
      {"VersionHuge", with(R"("version": 18446744073709551617)"), "/version", "must be 1"},
      {"VersionWrapsToOne", with(R"("version": 4294967297)"), "/version", "must be 1"},
      // bundle.
      {"MissingBundle", R"({"version": 1})", "/bundle", "is required"},
      {"EmptyObject", "{}", "/bundle", "is required"},
      {"BundleNumber", R"({"bundle": 5})", "/bundle",
       "must be an absolute path (a string), not an integer"},
      {"BundleNull", R"({"bundle": null})", "/bundle", "not null"},
      {"BundleList", R"({"bundle": ["/m"]})", "/bundle", "not an array"},
      // Paths.
      {"BundleRelative", R"({"bundle": "srv/m"})", "/bundle", "must be an absolute path"},
      {"BundleDotRelative", R"({"bundle": "./m"})", "/bundle", "must be an absolute path"},
      {"BundleTilde", R"({"bundle": "~/m"})", "/bundle", "must be an absolute path"},
      {"BundleEmpty", R"({"bundle": ""})", "/bundle", "must not be empty"},
      {"BundleDotDot", R"({"bundle": "/srv/../etc"})", "/bundle", "must not contain \"..\""},
      {"BundleTrailingDotDot", R"({"bundle": "/srv/.."})", "/bundle", "\"..\""},
      {"BundleTrailingDotDotSlash", R"({"bundle": "/srv/../"})", "/bundle", "\"..\""},
      {"RuntimeDot", with(R"("runtime": ["/opt", "/opt/./py"])"), "/runtime/1", "\".\" components"},
      {"RuntimeTrailingDot", with(R"("runtime": ["/opt/."])"), "/runtime/0", "\".\" components"},
      {"ToolsDoubleSlash", with(R"("tools": ["/usr//bin/ffmpeg"])"), "/tools/0", "empty component"},
      {"BundleOnlyDoubleSlash", R"({"bundle": "//"})", "/bundle", "empty component"},
      {"BundleLeadingDoubleSlash", R"({"bundle": "//srv/m"})", "/bundle", "empty component"},
      {"BundleTrailingDoubleSlash", R"({"bundle": "/srv/m//"})", "/bundle", "empty component"},
      {"WorkNulEscape", with(R"("work": "/w\u0000x")"), "/work", "control character"},
      {"TempNewlineEscape", with(R"("temp": "/t\nx")"), "/temp", "control character"},
      {"DataDelEscape", with(R"("data": ["/srv/d", "/d\u007f"])"), "/data/1", "control character"},
      // C1 controls (attack review): U+009B is CSI, U+0085 NEL; U+00A0 and "é" are not.
      {"WorkC1Csi", with(R"("work": "/w\u009b2J")"), "/work", "control character"},
      {"DataC1Nel", with(R"("data": ["/d\u0085x"])"), "/data/0", "control character"},
      {"RuntimeEmptyString", with(R"("runtime": [""])"), "/runtime/0", "must not be empty"},
      {"DataRelative", with(R"("data": ["/srv/ok", "datasets"])"), "/data/1",
       "must be an absolute path"},
      {"WorkEmpty", with(R"("work": "")"), "/work", "must not be empty"},
      {"TempRelative", with(R"("temp": "tmp")"), "/temp", "must be an absolute path"},
      {"PathTooLong", R"({"bundle": "/)" + std::string(4095, 'a') + R"("})", "/bundle", "PATH_MAX"},
      // Wrong types, every other field.
      {"RuntimeString", with(R"("runtime": "/opt")"), "/runtime",
       "must be a list of absolute paths, not a string"},
      {"RuntimeItemNumber", with(R"("runtime": [1])"), "/runtime/0", "not an integer"},
      {"ToolsObject", with(R"("tools": {})"), "/tools", "not an object"},
      {"ToolsItemNull", with(R"("tools": ["/a", null])"), "/tools/1", "not null"},
      {"WorkList", with(R"("work": ["/w"])"), "/work", "not an array"},
      {"DataString", with(R"("data": "/d")"), "/data", "must be a list of absolute paths"},
      {"TempBool", with(R"("temp": true)"), "/temp", "not a boolean"},
      {"ExecWritableString", with(R"("exec_writable": "false")"), "/exec_writable",
       "must be true or false, not a string"},
      {"ExecWritableNumber", with(R"("exec_writable": 0)"), "/exec_writable", "not an integer"},
      {"NetNumber", with(R"("net": 1)"), "/net", "must be one of"},
      {"NetNull", with(R"("net": null)"), "/net", "not null"},
      {"EgressString", with(R"("net": "egress-allowlist", "egress": "a.com:443")"), "/egress",
       "must be a list of \"host:port\" strings, not a string"},
      {"EgressItemNumber", egress("443"), "/egress/0",
       "must be a \"host:port\" string, not an integer"},
      {"EgressItemObject", egress(R"("a.com:443", {"host": "b.com"})"), "/egress/1",
       "not an object"},
      {"BrokerString", with(R"("broker": "yes")"), "/broker", "must be true or false"},
      {"BrokerNull", with(R"("broker": null)"), "/broker", "not null"},
      {"DevicesString", with(R"("devices": "none")"), "/devices",
       "must be an object, not a string"},
      {"GpuBool", with(R"("devices": {"gpu": true})"), "/devices/gpu", "not a boolean"},
      {"ReservationsList", with(R"("reservations": [])"), "/reservations", "must be an object"},
      {"IpcBool", with(R"("ipc_isolation": false)"), "/ipc_isolation", "not a boolean"},
      // Enumerations.
      {"NetUnknown", with(R"("net": "allowlist")"), "/net",
       R"(must be "none", "egress-allowlist" or "egress-any")"},
      {"NetWrongCase", with(R"("net": "None")"), "/net", "must be \"none\""},
      {"NetEmpty", with(R"("net": "")"), "/net", "must be \"none\""},
      {"GpuUnknown", with(R"("devices": {"gpu": "cuda"})"), "/devices/gpu",
       R"(must be "none" or "compute")"},
      {"IpcUnknown", with(R"("ipc_isolation": "optional")"), "/ipc_isolation",
       R"(must be "required" or "best-effort")"},
      {"IpcUnderscore", with(R"("ipc_isolation": "best_effort")"), "/ipc_isolation", "best-effort"},
      // egress and net.
      {"EgressWithoutNet", with(R"("egress": ["a.com:443"])"), "/egress",
       "only allowed with \"net\": \"egress-allowlist\""},
      {"EgressWithNetNone", with(R"("net": "none", "egress": ["a.com:443"])"), "/egress",
       "egress-allowlist"},
      {"EgressWithNetAny", with(R"("net": "egress-any", "egress": ["a.com:443"])"), "/egress",
       "egress-allowlist"},
      {"EgressHttpsUrl", egress(R"("https://host:443")"), "/egress/0",
       "egress entries are host:port, not URLs (write \"host:443\")"},
      {"EgressHttpUrl", egress(R"("http://example.com")"), "/egress/0",
       "egress entries are host:port, not URLs (write \"example.com:80\")"},
      {"EgressNoPort", egress(R"("api.example.com:443", "api.example.org")"), "/egress/1",
       "expected host:port"},
      {"EgressEmptyString", egress(R"("")"), "/egress/0", "expected host:port"},
      {"EgressEmptyPort", egress(R"("a.com:")"), "/egress/0",
       "port must be a number from 1 to 65535"},
      {"EgressPort0", egress(R"("a.com:0")"), "/egress/0", "port must be a number from 1 to 65535"},
      {"EgressPort65536", egress(R"("a.com:65536")"), "/egress/0",
       "port must be a number from 1 to 65535"},
      {"EgressPortHuge", egress(R"("a.com:99999999999999999999")"), "/egress/0", "port must be"},
      {"EgressPortLetters", egress(R"("a.com:44a")"), "/egress/0", "port must be"},
      {"EgressPortName", egress(R"("a.com:https")"), "/egress/0", "port must be"},
      {"EgressPortNegative", egress(R"("a.com:-1")"), "/egress/0", "port must be"},
      {"EgressPortPlus", egress(R"("a.com:+443")"), "/egress/0", "port must be"},
      {"EgressPortSpace", egress(R"("a.com: 443")"), "/egress/0", "port must be"},
      {"EgressIpv6NoBrackets", egress(R"("2001:db8::1:443")"), "/egress/0",
       "must be written in brackets"},
      {"EgressIpv6NoPort", egress(R"("[2001:db8::1]")"), "/egress/0", "expected [IPv6]:port"},
      {"EgressIpv6NoColon", egress(R"("[2001:db8::1]443")"), "/egress/0", "expected [IPv6]:port"},
      {"EgressIpv6Unclosed", egress(R"("[2001:db8::1:443")"), "/egress/0", "expected [IPv6]:port"},
      {"EgressIpv6Bad", egress(R"("[2001:db8::zz]:443")"), "/egress/0", "not an IPv6 address"},
      {"EgressIpv4InBrackets", egress(R"("[192.0.2.7]:443")"), "/egress/0", "not an IPv6 address"},
      {"EgressIpv6Zone", egress(R"("[fe80::1%eth0]:443")"), "/egress/0", "not an IPv6 address"},
      {"EgressEmptyBrackets", egress(R"("[]:443")"), "/egress/0", "not an IPv6 address"},
      {"EgressWildcardMiddle", egress(R"("api.*.example.com:443")"), "/egress/0", "wildcard"},
      {"EgressWildcardNoDot", egress(R"("*example.com:443")"), "/egress/0", "wildcard"},
      {"EgressWildcardAlone", egress(R"("*:443")"), "/egress/0", "wildcard"},
      {"EgressDoubleWildcard", egress(R"("*.*.example.com:443")"), "/egress/0", "wildcard"},
      {"EgressWildcardIp", egress(R"("*.192.0.2.7:443")"), "/egress/0",
       "wildcard cannot apply to an IP"},
      {"EgressWildcardEmpty", egress(R"("*.:443")"), "/egress/0", "empty host"},
      {"EgressLabel64", egress("\"" + label64 + ".example.com:443\""), "/egress/0",
       "label longer than 63 characters"},
      {"EgressHostTooLong", egress("\"" + long_host + ":443\""), "/egress/0", "longer than 253"},
      {"EgressNonAscii", egress(R"("bücher.example:443")"), "/egress/0", "punycode"},
      {"EgressUnderscore", egress(R"("my_host.example:443")"), "/egress/0", "punycode"},
      {"EgressEmptyHost", egress(R"(":443")"), "/egress/0", "empty host"},
      {"EgressDotHost", egress(R"(".:443")"), "/egress/0", "empty host"},
      {"EgressEmptyLabel", egress(R"("a..example.com:443")"), "/egress/0", "empty label"},
      {"EgressLeadingDot", egress(R"(".example.com:443")"), "/egress/0", "empty label"},
      {"EgressHyphenLabel", egress(R"("-a.example.com:443")"), "/egress/0",
       "starts or ends with '-'"},
      {"EgressBadIpv4", egress(R"("256.1.1.1:443")"), "/egress/0", "not a valid IPv4 address"},
      {"EgressShortIpv4", egress(R"("127.1:443")"), "/egress/0", "not a valid IPv4 address"},
      {"EgressHexIpv4", egress(R"("0x7f.0.0.1:443")"), "/egress/0", "not a valid IPv4 address"},
      {"EgressOctalIpv4", egress(R"("0177.0.0.1:443")"), "/egress/0", "not a valid IPv4 address"},
      {"EgressNulInHost", egress(R"("192.0.2.7\u0000.evil.example:443")"), "/egress/0",
       "control character"},
      {"EgressNulInIpv6", egress(R"("[::1\u0000zz]:443")"), "/egress/0", "control character"},
      {"EgressDuplicate", egress(R"("api.example.com:443", "b.com:1", "api.example.com:443")"),
       "/egress/2", "duplicate destination"},
      {"EgressDuplicateAfterNormalising",
       egress(R"("api.example.com:443", "API.Example.com.:443")"), "/egress/1",
       "duplicate destination"},
      {"EgressDuplicateIpv6", egress(R"("[2001:db8::1]:443", "[2001:DB8:0::1]:443")"), "/egress/1",
       "duplicate destination"},
      // reservations.
      {"CpuZero", cpu("0"), "/reservations/cpu", "must be at least 0.01 CPUs"},
      {"CpuNegative", cpu("-1"), "/reservations/cpu", "must be at least 0.01 CPUs"},
      {"CpuTiny", cpu("0.001"), "/reservations/cpu", "must be at least 0.01 CPUs"},
      {"CpuHuge", cpu("1e6"), "/reservations/cpu", "more CPUs than any node has"},
      {"CpuHugeInteger", cpu("18446744073709551615"), "/reservations/cpu", "more CPUs"},
      {"CpuString", cpu(R"("1.5")"), "/reservations/cpu", "must be a number of CPUs, not a string"},
      {"CpuBool", cpu("true"), "/reservations/cpu", "not a boolean"},
      {"CpuNull", cpu("null"), "/reservations/cpu", "not null"},
      {"MemoryNegative", memory("-1"), "/reservations/memory",
       "must be a positive number of bytes"},
      {"MemoryZero", memory("0"), "/reservations/memory", "must be more than 0 bytes"},
      {"MemoryZeroMi", memory(R"("0Mi")"), "/reservations/memory", "must be more than 0 bytes"},
      {"MemoryMB", memory(R"("512MB")"), "/reservations/memory", "Ki, Mi or Gi"},
      {"MemoryLowerCaseSuffix", memory(R"("512mi")"), "/reservations/memory", "Ki, Mi or Gi"},
      {"MemoryTi", memory(R"("1Ti")"), "/reservations/memory", "Ki, Mi or Gi"},
      {"MemoryDigitsString", memory(R"("512")"), "/reservations/memory", "Ki, Mi or Gi"},
      {"MemoryEmptyString", memory(R"("")"), "/reservations/memory", "Ki, Mi or Gi"},
      {"MemoryOnlySuffix", memory(R"("Mi")"), "/reservations/memory", "Ki, Mi or Gi"},
      {"MemoryFraction", memory(R"("1.5Gi")"), "/reservations/memory", "whole number"},
      {"MemoryNegativeString", memory(R"("-1Gi")"), "/reservations/memory", "whole number"},
      {"MemorySpace", memory(R"("512 Mi")"), "/reservations/memory", "whole number"},
      {"MemoryFloat", memory("1.5"), "/reservations/memory", "not a number"},
      {"MemoryExponent", memory("1e9"), "/reservations/memory", "not a number"},
      {"MemoryBool", memory("true"), "/reservations/memory", "not a boolean"},
      {"MemoryOverKMax", memory("4611686018427387905"), "/reservations/memory",
       "more memory than any node has"},
      {"MemoryMaxUint64", memory("18446744073709551615"), "/reservations/memory", "more memory"},
      {"MemoryBeyondUint64", memory("18446744073709551616"), "/reservations/memory",
       "not a number"},
      {"MemoryGiOverKMax", memory(R"("4294967297Gi")"), "/reservations/memory", "more memory"},
      // 2^34 Gi = 2^64 bytes: wrapped to 0 before the fix.
      {"MemoryGiWrapsToZero", memory(R"("17179869184Gi")"), "/reservations/memory", "more memory"},
      // 2^34 Gi + 1 Gi: wrapped to 1 GiB and was accepted before the fix.
      {"MemoryGiWrapsToOneGi", memory(R"("17179869185Gi")"), "/reservations/memory", "more memory"},
      {"MemoryManyDigits", memory(R"("99999999999999999999999Ki")"), "/reservations/memory",
       "more memory"},
  };
  return cases;
}

class InvalidPolicy : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidPolicy, RefusedWithPointerAndProblem) {
  const auto& c = GetParam();
  try {
    const Policy p = parse_policy(c.text);
    FAIL() << "accepted: " << policy_to_json(p).dump();
  } catch (const PolicyError& e) {
    EXPECT_EQ(e.pointer(), c.pointer) << e.what();
    EXPECT_NE(e.problem().find(c.problem), std::string::npos)
        << "problem: " << e.problem() << "\nexpected to contain: " << c.problem;
    const std::string prefix = c.pointer.empty() ? "(document): " : c.pointer + ": ";
    EXPECT_EQ(std::string(e.what()), prefix + e.problem());
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, InvalidPolicy, ::testing::ValuesIn(invalid_cases()),
                         [](const ::testing::TestParamInfo<InvalidCase>& case_info) {
                           return case_info.param.name;
                         });

TEST(InvalidPolicyTable, HasManyDistinctCases) {
  const auto cases = invalid_cases();
  EXPECT_GE(cases.size(), 35U);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    for (std::size_t j = i + 1; j < cases.size(); ++j) {
      EXPECT_NE(cases[i].name, cases[j].name);
      EXPECT_NE(cases[i].text, cases[j].text) << cases[i].name << " and " << cases[j].name;
    }
  }
}

// policy_from_json sees values parse_policy never produces (it is public: SDK tools build
// JSON themselves).
TEST(PolicyFromJson, ValuesBuiltInMemory) {
  json doc = {{"bundle", "/m"},
              {"reservations", {{"cpu", std::numeric_limits<double>::infinity()}}}};
  EXPECT_THROW(policy_from_json(doc), PolicyError);
  doc["reservations"]["cpu"] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(policy_from_json(doc), PolicyError);
  doc["reservations"]["cpu"] = 1;
  EXPECT_EQ(policy_from_json(doc).reservations.cpu, 1.0);
  doc["bundle"] = json::binary({1, 2, 3});
  EXPECT_THROW(policy_from_json(doc), PolicyError);
  EXPECT_THROW(policy_from_json(json()), PolicyError);
  EXPECT_THROW(policy_from_json(json::array()), PolicyError);
}

}  // namespace
}  // namespace oarbank

namespace oarbank {
namespace {

TEST(PolicyPaths, TheRootAndTheKernelsTreesAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"bundle": "/"})", "/bundle: must not be the root directory"},
      {R"({"bundle": "/m", "data": ["/proc"]})", "/data/0: must not be in /proc"},
      {R"({"bundle": "/m", "data": ["/proc/1/cwd"]})", "/data/0: must not be in /proc"},
      {R"({"bundle": "/m", "runtime": ["/dev"]})", "/runtime/0: must not be in /dev"},
      {R"({"bundle": "/m", "work": "/sys/fs/cgroup"})", "/work: must not be in /sys"},
      {R"({"bundle": "/m", "tools": ["/dev/nvidia0"]})", "/tools/0: must not be in /dev"},
      // Session 11's attack review: a writable grant covers the whole tree below it, and a
      // top-level directory holds other users' and the node's (/var/tmp is everyone's).
      {R"({"bundle": "/m", "data": ["/var"]})", "/data/0: must not be a whole top-level directory"},
      {R"({"bundle": "/m", "work": "/home"})", "/work: must not be a whole top-level directory"},
      {R"({"bundle": "/m", "temp": "/tmp"})", "/temp: must not be a whole top-level directory"},
  };
  for (const auto& [text, expected] : cases) {
    try {
      (void)parse_policy(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const PolicyError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(
      (void)parse_policy(R"({"bundle": "/m", "runtime": ["/procedures", "/device", "/system"]})"));
  // Read-only keys may name a top-level directory; writable ones one below it.
  EXPECT_NO_THROW((void)parse_policy(
      R"({"bundle": "/m", "runtime": ["/opt"], "work": "/srv/job", "data": ["/var/lib/job"]})"));
}

}  // namespace
}  // namespace oarbank
