// The node's configuration: defaults, every key, refusals, and which file is read.
#include "config/node_config.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace oarbank {
namespace {

using nlohmann::json;

TEST(NodeConfig, Defaults) {
  const NodeConfig c;
  EXPECT_EQ(c.module_uid, 65534U);
  EXPECT_EQ(c.module_gid, 65534U);
  EXPECT_EQ(c.proxy_host, "127.0.0.1");
  EXPECT_EQ(c.proxy_port, 3128);
  EXPECT_EQ(c.broker_socket, "/run/oarbank/broker.sock");
  EXPECT_FALSE(c.hard_limits);
  EXPECT_EQ(c.pids_max, 1024U);
  EXPECT_FALSE(c.cgroup_parent.has_value());
  EXPECT_FALSE(c.landlock_abi_max.has_value());
  EXPECT_FALSE(c.accept_port_only_egress);
  EXPECT_TRUE(c.module_world);
  EXPECT_EQ(parse_node_config("{}", "test"), c);
  EXPECT_EQ(parse_node_config(" { } \n", "test"), c);
  EXPECT_EQ(parse_node_config(R"({"module_user": {}})", "test"), c);
}

TEST(NodeConfig, EveryKey) {
  const NodeConfig c = parse_node_config(R"({
    "module_user": {"uid": 1000, "gid": 1001},
    "proxy_listen": "127.0.0.2:8080",
    "broker_socket": "/run/agent/broker.sock",
    "hard_limits": true,
    "pids_max": 4096,
    "cgroup_parent": "/system.slice/oarbank-agent.service/modules/",
    "landlock_abi_max": 3,
    "accept_port_only_egress": true
  })",
                                         "test");
  EXPECT_EQ(c.module_uid, 1000U);
  EXPECT_EQ(c.module_gid, 1001U);
  EXPECT_EQ(c.proxy_host, "127.0.0.2");
  EXPECT_EQ(c.proxy_port, 8080);
  EXPECT_EQ(c.broker_socket, "/run/agent/broker.sock");
  EXPECT_TRUE(c.hard_limits);
  EXPECT_EQ(c.pids_max, 4096U);
  EXPECT_EQ(c.cgroup_parent, "/system.slice/oarbank-agent.service/modules");
  EXPECT_EQ(c.landlock_abi_max, 3);
  EXPECT_TRUE(c.accept_port_only_egress);
  EXPECT_THROW(parse_node_config(R"({"accept_port_only_egress": 1})", "test"), ConfigError);
  EXPECT_FALSE(parse_node_config(R"({"module_world": false})", "test").module_world);
  EXPECT_THROW(parse_node_config(R"({"module_world": "no"})", "test"), ConfigError);
}

TEST(NodeConfig, NullsAndBounds) {
  const NodeConfig c = parse_node_config(
      R"({"pids_max": null, "cgroup_parent": null, "landlock_abi_max": null})", "test");
  EXPECT_FALSE(c.pids_max.has_value());
  EXPECT_FALSE(c.cgroup_parent.has_value());
  EXPECT_FALSE(c.landlock_abi_max.has_value());
  EXPECT_EQ(parse_node_config(R"({"landlock_abi_max": 0})", "t").landlock_abi_max, 0);
  EXPECT_EQ(parse_node_config(R"({"landlock_abi_max": 7})", "t").landlock_abi_max, 7);
  EXPECT_EQ(parse_node_config(R"({"pids_max": 1})", "t").pids_max, 1U);
  EXPECT_EQ(parse_node_config(R"({"pids_max": 4194304})", "t").pids_max, 4194304U);
  EXPECT_EQ(parse_node_config(R"({"module_user": {"uid": 1}})", "t").module_uid, 1U);
  EXPECT_EQ(parse_node_config(R"({"module_user": {"uid": 4294967294}})", "t").module_uid,
            4294967294U);
  EXPECT_EQ(parse_node_config(R"({"module_user": {"gid": 4294967294}})", "t").module_gid,
            4294967294U);
  EXPECT_EQ(parse_node_config(R"({"hard_limits": false})", "t").hard_limits, false);
  // A socket path of exactly 107 bytes fits sun_path.
  const std::string sock107 = "/" + std::string(106, 's');
  EXPECT_EQ(parse_node_config(R"({"broker_socket": ")" + sock107 + R"("})", "t").broker_socket,
            sock107);
}

TEST(NodeConfig, ProxyListenForms) {
  auto listen = [](const std::string& text) {
    const auto c = parse_node_config(R"({"proxy_listen": ")" + text + R"("})", "t");
    return std::pair(c.proxy_host, c.proxy_port);
  };
  EXPECT_EQ(listen("127.0.0.1:3128"), std::pair(std::string("127.0.0.1"), std::uint16_t{3128}));
  EXPECT_EQ(listen("0.0.0.0:1"), std::pair(std::string("0.0.0.0"), std::uint16_t{1}));
  EXPECT_EQ(listen("[::1]:65535"), std::pair(std::string("::1"), std::uint16_t{65535}));
  EXPECT_EQ(listen("[::]:3128"), std::pair(std::string("::"), std::uint16_t{3128}));
}

TEST(NodeConfig, RoundTripThroughJson) {
  std::vector<NodeConfig> configs(3);
  configs[1].module_uid = 1000;
  configs[1].module_gid = 100;
  configs[1].proxy_host = "::1";
  configs[1].proxy_port = 9;
  configs[1].hard_limits = true;
  configs[1].pids_max = std::nullopt;
  configs[1].cgroup_parent = "/oarbank";
  configs[1].landlock_abi_max = 0;
  configs[2].proxy_host = "127.0.0.9";
  configs[2].landlock_abi_max = 7;
  configs[2].broker_socket = "/tmp/b.sock";
  configs[1].module_users.reset();  // issue 12: off, as null
  configs[2].module_users = ModuleUserRange{100000, 100999, 7};
  for (const auto& c : configs) {
    const json j = node_config_to_json(c);
    for (const char* key : {"module_user", "proxy_listen", "broker_socket", "hard_limits",
                            "pids_max", "cgroup_parent", "landlock_abi_max"}) {
      EXPECT_TRUE(j.contains(key)) << key;
    }
    EXPECT_EQ(parse_node_config(j.dump(), "round-trip"), c) << j.dump();
  }
  EXPECT_EQ(node_config_to_json(configs[1])["proxy_listen"], "[::1]:9");
  EXPECT_EQ(node_config_to_json(NodeConfig{})["proxy_listen"], "127.0.0.1:3128");
}

TEST(NodeConfig, ErrorNamesSourceAndPointer) {
  try {
    parse_node_config(R"({"module_user": {"uid": 0}})", "/etc/oarbank/agent.json");
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.pointer(), "/module_user/uid");
    EXPECT_EQ(
        std::string(e.what()),
        "configuration /etc/oarbank/agent.json: /module_user/uid: must be from 1 to 4294967294");
  }
  try {
    parse_node_config("[]", "x.json");
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.pointer(), "");
    EXPECT_EQ(std::string(e.what()), "configuration x.json: (document): must be a JSON object");
  }
}

// Review of issue 12: the shared module_user is never inside the range leased to module ids.
TEST(NodeConfig, TheModuleUsersRangeMustNotHoldModuleUser) {
  try {
    parse_node_config(
        R"({"module_user": {"uid": 61200, "gid": 65534}, "module_users": {"first": 61184, "last": 65519}})",
        "agent.json");
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "configuration agent.json: /module_users: must not contain module_user's uid 61200 "
              "(61184-65519)");
  }
  EXPECT_NO_THROW(parse_node_config(
      R"({"module_user": {"uid": 61200, "gid": 61200}, "module_users": null})", "agent.json"));
}

struct InvalidConfig {
  std::string name;
  std::string text;
  std::string pointer;
  std::string problem;  // a substring of what()
};

void PrintTo(const InvalidConfig& c, std::ostream* os) { *os << c.name; }

std::vector<InvalidConfig> invalid_configs() {
  using namespace std::string_literals;
  return {
      {"Malformed", R"({"hard_limits": true)", "", "malformed JSON"},
      {"UnterminatedComment", "{} /* none", "", "malformed JSON"},
      // Issue 16: a file system path is no cgroup path.
      {"CgroupParentMountPath", R"({"cgroup_parent": "/sys/fs/cgroup/unified"})", "/cgroup_parent",
       "is a file system path; write the cgroup's path below the cgroup2 mount, as "
       "/proc/self/cgroup shows it (e.g. \"/system.slice/oarbank-agent.service\")"},
      {"CgroupParentBelowTheMount", R"({"cgroup_parent": "/sys/fs/cgroup/unified/oarbank"})",
       "/cgroup_parent",
       "(e.g. \"/system.slice/oarbank-agent.service\"); here perhaps \"/oarbank\""},
      {"CgroupParentBelowAV2Mount", R"({"cgroup_parent": "/sys/fs/cgroup/system.slice/x"})",
       "/cgroup_parent", "; here perhaps \"/system.slice/x\""},
      {"UnknownKeyNearProxyListen", R"({"proxy_listn": "127.0.0.1:3128"})", "/proxy_listn",
       "unknown key; did you mean \"proxy_listen\"?"},
      {"UnknownModuleUserFieldNearUid", R"({"module_user": {"uuid": 7}})", "/module_user/uuid",
       "unknown field; did you mean \"uid\"?"},
      // Comments are allowed here (JSONC): a trailing comma before one is still named.
      {"TrailingCommaBeforeAComment", "{\"hard_limits\": true, // the limits\n}", "",
       "malformed JSON: a trailing comma at line 1, column 21: JSON allows no comma after the "
       "last member of an object"},
      {"WritableRootsNotAList", R"({"writable_roots": "/tmp"})", "/writable_roots",
       "must be a list"},
      {"WritableRootsRelative", R"({"writable_roots": ["/tmp", "jobs"]})", "/writable_roots/1",
       "absolute"},
      {"WritableRootsSlash", R"({"writable_roots": ["/"]})", "/writable_roots/0", "must not be /"},
      {"WritableRootsDotDot", R"({"writable_roots": ["/var/../etc"]})", "/writable_roots/0", ".."},
      {"NulThenGarbage", "{}\0{\"module_user\":{\"uid\":0}}"s, "", "NUL byte"},
      {"InvalidUtf8", "{\"cgroup_parent\": \"/a\xff\"}", "", "UTF-8"},
      {"NumberOverflow", R"({"pids_max": 1e999})", "", "number overflow"},
      {"TooDeep", std::string(100, '['), "/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0",
       "nested deeper than 16"},
      {"TopArray", "[]", "", "must be a JSON object"},
      {"TopNull", "null", "", "must be a JSON object"},
      {"UnknownKey", R"({"proxy": "127.0.0.1:3128"})", "/proxy", "unknown key"},
      {"UnknownKeyEscaped", R"({"module/user": 1})", "/module~1user", "unknown key"},
      {"DuplicateKey", R"({"hard_limits": true, "hard_limits": false})", "/hard_limits",
       "duplicate key"},
      {"DuplicateNested", R"({"module_user": {"uid": 5, "uid": 0}})", "/module_user/uid",
       "duplicate key"},
      // module_users (issue 12).
      {"UsersNotObject", R"({"module_users": [61184, 65519]})", "/module_users",
       "must be null or an object"},
      {"UsersFirst0", R"({"module_users": {"first": 0}})", "/module_users/first",
       "must be from 1 to 4294967294"},
      {"UsersLastAllOnes", R"({"module_users": {"last": 4294967295}})", "/module_users/last",
       "must be from 1 to 4294967294"},
      {"UsersLastBelowFirst", R"({"module_users": {"first": 70000, "last": 69999}})",
       "/module_users/last", "must not be below first (70000)"},
      {"UsersReclaimZero", R"({"module_users": {"reclaim_after_days": 0}})",
       "/module_users/reclaim_after_days", "must be from 1 to 36500"},
      {"UsersUnknownField", R"({"module_users": {"frist": 1}})", "/module_users/frist",
       "did you mean \"first\"?"},
      // module_user.
      {"UserNotObject", R"({"module_user": 1000})", "/module_user", "must be an object"},
      {"UserUnknownField", R"({"module_user": {"uid": 1000, "name": "nobody"}})",
       "/module_user/name", "unknown field"},
      {"Uid0", R"({"module_user": {"uid": 0, "gid": 1000}})", "/module_user/uid",
       "must be from 1 to 4294967294"},
      {"Gid0", R"({"module_user": {"uid": 1000, "gid": 0}})", "/module_user/gid",
       "must be from 1 to 4294967294"},
      {"UidNegative", R"({"module_user": {"uid": -1}})", "/module_user/uid",
       "must be an integer from 1"},
      {"UidOverflow", R"({"module_user": {"uid": 4294967295}})", "/module_user/uid",
       "must be from 1"},
      {"UidWrapsToZero", R"({"module_user": {"uid": 4294967296}})", "/module_user/uid",
       "must be from 1"},
      {"UidString", R"({"module_user": {"uid": "1000"}})", "/module_user/uid", "not a string"},
      {"UidFloat", R"({"module_user": {"uid": 1000.0}})", "/module_user/uid", "not a number"},
      {"UidBool", R"({"module_user": {"uid": true}})", "/module_user/uid", "not a boolean"},
      // proxy_listen.
      {"ProxyNotString", R"({"proxy_listen": 3128})", "/proxy_listen", "must be a string"},
      {"ProxyEmpty", R"({"proxy_listen": ""})", "/proxy_listen", "must be IP:PORT"},
      {"ProxyNoPort", R"({"proxy_listen": "127.0.0.1"})", "/proxy_listen", "must be IP:PORT"},
      {"ProxyOnlyPort", R"({"proxy_listen": ":3128"})", "/proxy_listen", "must be IP:PORT"},
      {"ProxyHostName", R"({"proxy_listen": "localhost:3128"})", "/proxy_listen",
       "must be IP:PORT"},
      {"ProxyPort0", R"({"proxy_listen": "127.0.0.1:0"})", "/proxy_listen",
       "port must be a number from 1 to 65535"},
      {"ProxyPort65536", R"({"proxy_listen": "127.0.0.1:65536"})", "/proxy_listen", "port must be"},
      {"ProxyPortEmpty", R"({"proxy_listen": "127.0.0.1:"})", "/proxy_listen", "port must be"},
      {"ProxyPortLetters", R"({"proxy_listen": "127.0.0.1:31a8"})", "/proxy_listen",
       "port must be"},
      {"ProxyPortHuge", R"({"proxy_listen": "127.0.0.1:99999999999999999999"})", "/proxy_listen",
       "port must be"},
      {"ProxyIpv6NoBrackets", R"({"proxy_listen": "::1:3128"})", "/proxy_listen",
       "must be written in brackets"},
      {"ProxyIpv6NoPort", R"({"proxy_listen": "[::1]"})", "/proxy_listen", "must be IP:PORT"},
      {"ProxyIpv6Bad", R"({"proxy_listen": "[::g]:3128"})", "/proxy_listen", "not an IPv6 address"},
      {"ProxyIpv4InBrackets", R"({"proxy_listen": "[127.0.0.1]:3128"})", "/proxy_listen",
       "not an IPv6 address"},
      {"ProxyEmptyBrackets", R"({"proxy_listen": "[]:3128"})", "/proxy_listen",
       "not an IPv6 address"},
      // Session 16: only loopback or the wildcard (the module's namespace holds only loopback).
      {"ProxyNetworkAddress", R"({"proxy_listen": "192.0.2.2:3128"})", "/proxy_listen",
       "must be a loopback address"},
      {"ProxyIpv6NetworkAddress", R"({"proxy_listen": "[fd00::2]:8080"})", "/proxy_listen",
       "must be a loopback address"},
      {"ProxyNul", R"({"proxy_listen": "127.0.0.1\u0000junk:3128"})", "/proxy_listen",
       "control character"},
      {"ProxyNulIpv6", R"({"proxy_listen": "[::1\u0000junk]:3128"})", "/proxy_listen",
       "control character"},
      // broker_socket.
      {"BrokerRelative", R"({"broker_socket": "run/broker.sock"})", "/broker_socket",
       "must be an absolute path"},
      {"BrokerEmpty", R"({"broker_socket": ""})", "/broker_socket", "must not be empty"},
      {"BrokerDotDot", R"({"broker_socket": "/run/../broker.sock"})", "/broker_socket", "\"..\""},
      {"BrokerTooLong", R"({"broker_socket": "/)" + std::string(107, 's') + R"("})",
       "/broker_socket", "longer than a unix socket path can be"},
      {"BrokerNumber", R"({"broker_socket": 1})", "/broker_socket", "must be a string"},
      {"BrokerNull", R"({"broker_socket": null})", "/broker_socket", "must be a string, not null"},
      // hard_limits.
      {"HardLimitsString", R"({"hard_limits": "yes"})", "/hard_limits", "must be true or false"},
      {"HardLimitsNumber", R"({"hard_limits": 1})", "/hard_limits", "must be true or false"},
      // pids_max.
      {"PidsZero", R"({"pids_max": 0})", "/pids_max", "must be from 1 to 4194304"},
      {"PidsTooMany", R"({"pids_max": 4194305})", "/pids_max", "must be from 1 to 4194304"},
      {"PidsNegative", R"({"pids_max": -1})", "/pids_max", "must be an integer"},
      {"PidsString", R"({"pids_max": "1024"})", "/pids_max", "not a string"},
      // cgroup_parent.
      {"CgroupRelative", R"({"cgroup_parent": "oarbank"})", "/cgroup_parent",
       "must be an absolute path"},
      {"CgroupEmpty", R"({"cgroup_parent": ""})", "/cgroup_parent", "must not be empty"},
      {"CgroupDotDot", R"({"cgroup_parent": "/a/../b"})", "/cgroup_parent", "\"..\""},
      {"CgroupDoubleSlash", R"({"cgroup_parent": "//"})", "/cgroup_parent", "empty component"},
      {"CgroupControl", R"({"cgroup_parent": "/a\nb"})", "/cgroup_parent", "control character"},
      {"CgroupBool", R"({"cgroup_parent": false})", "/cgroup_parent", "must be a string"},
      // landlock_abi_max.
      {"AbiNegative", R"({"landlock_abi_max": -1})", "/landlock_abi_max",
       "must be an integer from 0 to 7"},
      {"AbiTooNew", R"({"landlock_abi_max": 8})", "/landlock_abi_max", "must be from 0 to 7"},
      {"AbiHuge", R"({"landlock_abi_max": 4294967296})", "/landlock_abi_max",
       "must be from 0 to 7"},
      {"AbiString", R"({"landlock_abi_max": "3"})", "/landlock_abi_max", "not a string"},
      {"AbiFloat", R"({"landlock_abi_max": 3.0})", "/landlock_abi_max", "not a number"},
  };
}

class InvalidNodeConfig : public ::testing::TestWithParam<InvalidConfig> {};

TEST_P(InvalidNodeConfig, Refused) {
  const auto& c = GetParam();
  try {
    const NodeConfig config = parse_node_config(c.text, "test.json");
    FAIL() << "accepted: " << node_config_to_json(config).dump();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.pointer(), c.pointer) << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find(c.problem), std::string::npos)
        << what << "\nexpected to contain: " << c.problem;
    EXPECT_EQ(what.rfind("configuration test.json: ", 0), 0U) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, InvalidNodeConfig, ::testing::ValuesIn(invalid_configs()),
                         [](const ::testing::TestParamInfo<InvalidConfig>& case_info) {
                           return case_info.param.name;
                         });

// ---- Which file is read ------------------------------------------------------------------

// Sets (or unsets) OARBANK_AGENT_CONFIG for one test and restores it afterwards.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::optional<std::string>& value) {
    if (const char* old = std::getenv(kConfigEnvVar)) old_ = old;
    if (value) {
      ::setenv(kConfigEnvVar, value->c_str(), 1);
    } else {
      ::unsetenv(kConfigEnvVar);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(kConfigEnvVar, old_->c_str(), 1);
    } else {
      ::unsetenv(kConfigEnvVar);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::optional<std::string> old_;
};

class LoadNodeConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "oarbank-config-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string write(const std::string& name, const std::string& text) {
    const auto path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
  std::filesystem::path dir_;
};

TEST_F(LoadNodeConfig, ExplicitPathWinsOverEnvironment) {
  const auto explicit_file = write("explicit.json", R"({"pids_max": 11})");
  const auto env_file = write("env.json", R"({"pids_max": 22})");
  ScopedEnv env(env_file);
  EXPECT_EQ(load_node_config(explicit_file).pids_max, 11U);
}

TEST_F(LoadNodeConfig, EnvironmentWinsOverDefaultPath) {
  const auto env_file = write("env.json", R"({"pids_max": 22})");
  ScopedEnv env(env_file);
  EXPECT_EQ(load_node_config(std::nullopt).pids_max, 22U);
}

TEST_F(LoadNodeConfig, ExplicitMissingFileIsAnError) {
  const auto missing = (dir_ / "missing.json").string();
  ScopedEnv env(std::nullopt);
  try {
    load_node_config(missing);
    FAIL() << "accepted a missing explicit file";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  // Even when the environment names a good one.
  const auto env_file = write("env.json", "{}");
  ScopedEnv env2(env_file);
  EXPECT_THROW(load_node_config(missing), ConfigError);
}

TEST_F(LoadNodeConfig, EnvironmentMissingFileIsAnError) {
  ScopedEnv env((dir_ / "missing.json").string());
  EXPECT_THROW(load_node_config(std::nullopt), ConfigError);
}

TEST_F(LoadNodeConfig, EmptyEnvironmentFallsBackToDefaultPath) {
  if (std::filesystem::exists(kDefaultConfigPath)) {
    GTEST_SKIP() << kDefaultConfigPath << " exists on this machine";
  }
  ScopedEnv env(std::string{});
  EXPECT_EQ(load_node_config(std::nullopt), NodeConfig{});
}

TEST_F(LoadNodeConfig, NoFileAnywhereGivesDefaults) {
  if (std::filesystem::exists(kDefaultConfigPath)) {
    GTEST_SKIP() << kDefaultConfigPath << " exists on this machine";
  }
  ScopedEnv env(std::nullopt);
  EXPECT_EQ(load_node_config(std::nullopt), NodeConfig{});
}

TEST_F(LoadNodeConfig, DefaultPathIsReadWhenPresent) {
  // Only where the test may create /etc/oarbank/agent.json without disturbing anything: an
  // existing file is never touched.
  const std::filesystem::path path = kDefaultConfigPath;
  std::error_code ec;
  const bool dir_existed = std::filesystem::exists(path.parent_path());
  if (std::filesystem::exists(path) || ::geteuid() != 0 ||
      std::getenv("OARBANK_TEST_WRITE_ETC") == nullptr) {
    GTEST_SKIP() << "set OARBANK_TEST_WRITE_ETC=1 as root, without " << kDefaultConfigPath;
  }
  std::filesystem::create_directories(path.parent_path(), ec);
  ASSERT_FALSE(ec) << ec.message();
  std::ofstream(path) << R"({"pids_max": 33})";
  ScopedEnv env(std::nullopt);
  const auto from_etc = load_node_config(std::nullopt);
  const auto env_file = write("env.json", R"({"pids_max": 22})");
  const auto from_env = [&] {
    ScopedEnv env2(env_file);
    return load_node_config(std::nullopt);
  }();
  std::filesystem::remove(path, ec);
  if (!dir_existed) std::filesystem::remove(path.parent_path(), ec);
  EXPECT_EQ(from_etc.pids_max, 33U);
  EXPECT_EQ(from_env.pids_max, 22U);
}

TEST_F(LoadNodeConfig, InvalidFileNamesItsPath) {
  const auto bad = write("bad.json", R"({"module_user": {"uid": 0}})");
  try {
    load_node_config(bad);
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.pointer(), "/module_user/uid");
    EXPECT_NE(std::string(e.what()).find("configuration " + bad + ": "), std::string::npos)
        << e.what();
  }
}

TEST_F(LoadNodeConfig, DirectoryAndOversizedFileAreErrors) {
  EXPECT_THROW(load_node_config(dir_.string()), ConfigError);
  const auto big = write("big.json", "{}" + std::string((1 << 20) + 1, ' '));
  try {
    load_node_config(big);
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("larger than the limit"), std::string::npos) << e.what();
  }
}

TEST_F(LoadNodeConfig, ValidFileWithEveryKey) {
  const auto file = write("agent.json", R"({
    "module_user": {"uid": 2000, "gid": 2000}, "proxy_listen": "[::1]:3129",
    "broker_socket": "/run/b.sock", "hard_limits": true, "pids_max": null,
    "cgroup_parent": "/oarbank", "landlock_abi_max": 5})");
  const NodeConfig c = load_node_config(file);
  EXPECT_EQ(c.module_uid, 2000U);
  EXPECT_EQ(c.proxy_host, "::1");
  EXPECT_EQ(c.proxy_port, 3129);
  EXPECT_EQ(c.broker_socket, "/run/b.sock");
  EXPECT_TRUE(c.hard_limits);
  EXPECT_FALSE(c.pids_max.has_value());
  EXPECT_EQ(c.cgroup_parent, "/oarbank");
  EXPECT_EQ(c.landlock_abi_max, 5);
}

}  // namespace
}  // namespace oarbank

namespace oarbank {
namespace {

// Issue 12: the range of module users, on by default (systemd's dynamic-user range), off with
// null, a partial object keeping the other fields' defaults.
TEST(NodeConfig, ModuleUsersRange) {
  const NodeConfig defaults;
  ASSERT_TRUE(defaults.module_users.has_value());
  EXPECT_EQ(defaults.module_users->first, 61184U);
  EXPECT_EQ(defaults.module_users->last, 65519U);
  EXPECT_EQ(defaults.module_users->reclaim_after_days, 90U);
  EXPECT_FALSE(parse_node_config(R"({"module_users": null})", "t").module_users.has_value());
  const auto narrow =
      parse_node_config(R"({"module_users": {"first": 70000, "last": 70000}})", "t");
  ASSERT_TRUE(narrow.module_users.has_value());
  EXPECT_EQ(narrow.module_users->first, 70000U);
  EXPECT_EQ(narrow.module_users->last, 70000U);
  EXPECT_EQ(narrow.module_users->reclaim_after_days, 90U);
  EXPECT_EQ(node_config_to_json(NodeConfig{})["module_users"],
            (nlohmann::json{{"first", 61184}, {"last", 65519}, {"reclaim_after_days", 90}}));
}

}  // namespace
}  // namespace oarbank
