// Comments in the node configuration (JSONC), and the shipped default file: the config
// accepts `//` and `/* */` so that /etc/oarbank/agent.json can explain each key in place; a
// policy still refuses them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "config/node_config.hpp"
#include "oarbank/policy.hpp"

namespace oarbank {
namespace {

using nlohmann::json;

// tests/golden is the one source path the unit tests are given; packaging/ is beside tests/.
const std::string kShippedConfig = OARBANK_GOLDEN_DIR "/../../packaging/agent.json";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ShippedConfig, ParsesToTheBuiltInDefaults) {
  ASSERT_TRUE(std::filesystem::is_regular_file(kShippedConfig)) << kShippedConfig;
  EXPECT_EQ(load_node_config(kShippedConfig), NodeConfig{});
}

TEST(ShippedConfig, ShowsEveryKeyAtItsDefault) {
  // Not only "parses to the defaults" (which "{}" also does): every key is written out, with
  // the value the defaults serialize to, so the file documents the whole configuration. A key
  // added to the parser without a line here fails this test.
  const json shipped = json::parse(read_text(kShippedConfig), nullptr, /*allow_exceptions=*/true,
                                   /*ignore_comments=*/true);
  const json defaults = node_config_to_json(NodeConfig{});
  std::set<std::string> shipped_keys;
  std::set<std::string> default_keys;
  for (const auto& item : shipped.items()) shipped_keys.insert(item.key());
  for (const auto& item : defaults.items()) default_keys.insert(item.key());
  EXPECT_EQ(shipped_keys, default_keys);
  EXPECT_EQ(shipped, defaults) << shipped.dump();
}

TEST(ShippedConfig, IsCommented) {
  // The point of shipping it: a comment next to each key.
  const std::string text = read_text(kShippedConfig);
  const json defaults = node_config_to_json(NodeConfig{});
  for (const auto& item : defaults.items()) {
    const std::string& key = item.key();
    const auto at = text.find("\"" + key + "\":");
    ASSERT_NE(at, std::string::npos) << key;
    const auto comment = text.rfind("//", at);
    ASSERT_NE(comment, std::string::npos) << key;
    // The comment is on the lines just above the key: no other key between them.
    const std::string between = text.substr(comment, at - comment);
    EXPECT_EQ(between.find("\":"), std::string::npos) << key << " has no comment of its own";
  }
}

TEST(ConfigComments, LineCommentsAreAccepted) {
  const NodeConfig c = parse_node_config(
      "// the node's configuration\n"
      "{ // opening\n"
      "  \"hard_limits\": true, // turn reservations into cpu.max and memory.max\n"
      "  // a whole line\n"
      "  \"pids_max\": // between key and value\n"
      "    512\n"
      "}\n"
      "// after the document, without a final newline",
      "test.json");
  EXPECT_TRUE(c.hard_limits);
  EXPECT_EQ(c.pids_max, 512U);
}

TEST(ConfigComments, BlockCommentsAreAccepted) {
  const NodeConfig c = parse_node_config(
      "/* the node's\n   configuration */{/**/\"module_user\"/* k */:{\"uid\":/* v */1000,"
      "\"gid\": 1000 /* several\n lines\n */}, \"landlock_abi_max\": 3 /* last */ } /* end */",
      "test.json");
  EXPECT_EQ(c.module_uid, 1000U);
  EXPECT_EQ(c.module_gid, 1000U);
  EXPECT_EQ(c.landlock_abi_max, 3);
  // A comment marker inside a block comment, and an empty document apart from comments.
  EXPECT_EQ(parse_node_config("/* // not a line comment */ {} // /* not a block */", "t"),
            NodeConfig{});
}

TEST(ConfigComments, CommentMarkersInsideStringsAreText) {
  const NodeConfig c = parse_node_config(
      R"({"cgroup_parent": "/oarbank/*x*/", "broker_socket": "/run/a/*"})", "test.json");
  EXPECT_EQ(c.cgroup_parent, "/oarbank/*x*");
  EXPECT_EQ(c.broker_socket, "/run/a/*");
}

TEST(ConfigComments, NothingElseIsRelaxed) {
  // Comments are whitespace, nothing more: JSON5's other liberties stay refused, and the
  // strict checks still see every key.
  const struct {
    const char* text;
    const char* pointer;
    const char* problem;
  } cases[] = {
      {"{\"hard_limits\": true, // x\n}", "", "malformed JSON"},  // trailing comma
      {"{hard_limits: true}", "", "malformed JSON"},
      {"{\"hard_limits\": true} # shell comment", "", "malformed JSON"},
      {"{\"hard_limits\": true / 2}", "", "malformed JSON"},
      {"{\"pids_max\": 1, /* again */ \"pids_max\": 2}", "/pids_max", "duplicate key"},
      {"{/* a key commented in is still checked */ \"module_user\": {\"uid\": 0}}",
       "/module_user/uid", "must be from 1"},
  };
  for (const auto& c : cases) {
    try {
      parse_node_config(c.text, "test.json");
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.pointer(), c.pointer) << c.text;
      EXPECT_NE(std::string(e.what()).find(c.problem), std::string::npos) << e.what();
    }
  }
}

TEST(ConfigComments, PolicyStillRefusesComments) {
  // A policy is written by the SDK and read by other tools too: the exit-64 path, as before.
  for (const char* text : {R"({"bundle": "/m" /* the module */})",
                           "// policy\n{\"bundle\": \"/m\"}", "{\"bundle\": \"/m\"} // end"}) {
    try {
      parse_policy(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const PolicyError& e) {
      EXPECT_EQ(e.pointer(), "") << text;
      EXPECT_NE(e.problem().find("malformed JSON"), std::string::npos) << e.problem();
    }
  }
}

class ConfigCommentFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "oarbank-comments-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const auto path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(ConfigCommentFile, CommentedFileLoads) {
  const auto path = write("agent.json", "// ours\n{\n  \"pids_max\": null /* unlimited */\n}\n");
  EXPECT_FALSE(load_node_config(path).pids_max.has_value());
}

TEST_F(ConfigCommentFile, UnterminatedBlockCommentIsOneLineNamingTheFile) {
  const auto path =
      write("agent.json", "{\n  \"hard_limits\": true /* never closed\n  \"pids_max\": 1\n}\n");
  try {
    load_node_config(path);
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.pointer(), "");
    EXPECT_EQ(what.rfind("configuration " + path + ": (document): malformed JSON: ", 0), 0U)
        << what;
    EXPECT_NE(what.find("comment"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST_F(ConfigCommentFile, LoneSlashIsMalformed) {
  const auto path = write("agent.json", "{} /");
  try {
    load_node_config(path);
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("configuration " + path + ": (document): malformed JSON: ", 0), 0U)
        << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace oarbank
