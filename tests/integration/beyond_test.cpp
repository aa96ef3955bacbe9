// Beyond the page (docs/launcher.md, "The steps, in order" and "What the module gets"): no
// root, only its own descriptors, no terminal injection, a clean environment. Run under the same
// node caps as the mapping rows.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sandbox_fixture.hpp"

namespace oarbank::it {
namespace {

std::map<std::string, std::string> status_fields(const std::string& text) {
  std::map<std::string, std::string> fields;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    // Whitespace between the kernel's columns becomes one space.
    std::string squeezed;
    for (char c : value) {
      if (c == '\t' || c == ' ') {
        if (!squeezed.empty() && squeezed.back() != ' ') squeezed += ' ';
      } else {
        squeezed += c;
      }
    }
    while (!squeezed.empty() && squeezed.back() == ' ') squeezed.pop_back();
    fields[line.substr(0, colon)] = squeezed;
  }
  return fields;
}

std::string lines(std::vector<std::string> entries) {
  std::sort(entries.begin(), entries.end());
  std::string out;
  for (const auto& e : entries) out += (out.empty() ? "" : "\n") + e;
  return out;
}

// ---------------------------------------------------------------------------------------------
// No root: the module user, no supplementary groups, no capabilities in any set.
// ---------------------------------------------------------------------------------------------
class Identity : public CapTest {};

TEST_P(Identity, ModuleUserWithoutCapabilities) {
  const std::string out = probe(base_policy(), {"status"});
  auto f = status_fields(out);
  const std::string uid = std::to_string(module_uid());
  const std::string gid = std::to_string(module_gid());
  EXPECT_EQ(f["Uid"], uid + " " + uid + " " + uid + " " + uid) << out;
  EXPECT_EQ(f["Gid"], gid + " " + gid + " " + gid + " " + gid) << out;
  if (running_as_root()) {
    EXPECT_EQ(f["Groups"], "") << out;
  }
  for (const char* cap : {"CapInh", "CapPrm", "CapEff", "CapAmb"}) {
    EXPECT_EQ(f[cap], "0000000000000000") << cap << "\n" << out;
  }
  // Dropping the bounding set needs CAP_SETPCAP: a launcher started by an unprivileged user
  // keeps it (and NoNewPrivs, below, means it can never be used to gain anything).
  if (running_as_root()) {
    EXPECT_EQ(f["CapBnd"], "0000000000000000") << out;
  }
  EXPECT_EQ(f["NoNewPrivs"], "1") << out;
  EXPECT_EQ(f["Seccomp"], "2") << out;
}

TEST_P(Identity, ConfiguredModuleUser) {
  if (!running_as_root()) GTEST_SKIP() << "needs root to change user";
  auto config = node_config();
  config["module_user"] = {{"uid", 4242}, {"gid", 4343}};
  const std::string cfg = tree.write_json("agent-4242.json", config);
  for (const char* dir : {"work", "temp", "data0", "data1"}) {
    ASSERT_EQ(::chown(tree.path(dir).c_str(), 4242, 4343), 0);
  }
  LaunchOptions o;
  o.config = cfg;
  auto f = status_fields(probe(base_policy(), {"status"}, o));
  EXPECT_EQ(f["Uid"], "4242 4242 4242 4242");
  EXPECT_EQ(f["Gid"], "4343 4343 4343 4343");
  EXPECT_EQ(f["Groups"], "");
  EXPECT_EQ(f["CapEff"], "0000000000000000");
  EXPECT_EQ(probe(base_policy(), {"write", tree.path("work/f")}, o), "ok");
}

TEST_P(Identity, UnprivilegedLauncherKeepsItsUser) {
  if (!running_as_root()) GTEST_SKIP() << "needs root to start the launcher as another user";
  LaunchOptions o;
  o.run.user = std::make_pair(module_uid(), module_gid());
  auto f = status_fields(probe(base_policy(), {"status"}, o));
  EXPECT_EQ(f["Uid"], "65534 65534 65534 65534");
  EXPECT_EQ(f["CapEff"], "0000000000000000");
  EXPECT_EQ(f["CapPrm"], "0000000000000000");
  EXPECT_EQ(f["NoNewPrivs"], "1");
  EXPECT_EQ(f["Seccomp"], "2");
  EXPECT_EQ(probe(base_policy(), {"read", tree.path("outside/secret.txt")}, o), "errno EACCES");
  // Another unprivileged user cannot use the work directory (root's, 0755): refused, named.
  // (Directories of 65534's are refused for 4242 before this, by the directory rule of issue
  // 10: directories_test.cpp.)
  for (const char* dir : {"work", "temp", "data0", "data1"}) {
    ASSERT_EQ(::chown(tree.path(dir).c_str(), 0, 0), 0);
  }
  o.run.user = std::make_pair(uid_t{4242}, gid_t{4242});
  RunResult r = launch(base_policy(), {"write", tree.path("work/ran")}, o);
  expect_launcher_failure(r, 70,
                          {"the module user (uid 4242) needs read, write and search access to "
                           "the work directory " +
                           tree.path("work") + ", owned by uid 0 with mode"});
  EXPECT_FALSE(exists(tree.path("work/ran")));
}

// ---------------------------------------------------------------------------------------------
// Only its own file descriptors: 0, 1, 2 and the ones the caller names with --keep-fd.
// ---------------------------------------------------------------------------------------------
class Descriptors : public CapTest {
 protected:
  void TearDown() override {
    for (int fd : opened_) ::close(fd);
  }
  int leak(int fd) {
    EXPECT_GE(fd, 3);
    EXPECT_EQ(::fcntl(fd, F_GETFD), 0) << "must be inherited (no FD_CLOEXEC)";
    opened_.push_back(fd);
    return fd;
  }
  std::vector<int> opened_;
};

TEST_P(Descriptors, InheritedDescriptorsDoNotReachTheModule) {
  // Opened before the ruleset, these would be holes: a file Landlock would refuse, and an
  // inet socket seccomp would refuse to create under net none.
  const int file = leak(::open(tree.path("outside/secret.txt").c_str(), O_RDONLY));
  const int sock = leak(::socket(AF_INET, SOCK_STREAM, 0));
  expect_probes(base_policy(),
                {
                    {{"open-fds"}, "0 1 2"},  // first: the payload has opened nothing yet
                    {{"fd-open", std::to_string(file)}, "closed"},
                    {{"fd-open", std::to_string(sock)}, "closed"},
                });
}

TEST_P(Descriptors, KeepFdPassesTheNamedDescriptorOnly) {
  const int file = leak(::open(tree.path("outside/secret.txt").c_str(), O_RDONLY));
  const int other = leak(::open("/dev/null", O_RDONLY));
  LaunchOptions o;
  o.keep_fds = {file};
  // The caller chose to hand it over, so the module can use it although Landlock refuses
  // the path itself.
  expect_probes(base_policy(),
                {
                    {{"open-fds"}, "0 1 2 " + std::to_string(file)},
                    {{"fd-open", std::to_string(other)}, "closed"},
                    {{"read-fd", std::to_string(file)}, "secret"},
                    {{"read", tree.path("outside/secret.txt")}, "errno EACCES"},
                },
                o);
}

TEST_P(Descriptors, ClosedStandardDescriptorsAreNotReusedForSecrets) {
  // The module always gets 0, 1 and 2, even when its caller closed one.
  // The launcher is started through a shell that closes fd 0 for it.
  const std::string policy_file = tree.write_json("policy-closed0.json", base_policy());
  RunResult r =
      run_command({"/bin/sh", "-c", "exec \"$0\" \"$@\" 0<&-", OARBANK_AGENT_BINARY, "sandbox-exec",
                   "--config", config_path, policy_file, "--", tree.probe(), "open-fds"});
  EXPECT_TRUE(r.exited(0)) << r.describe();
  EXPECT_EQ(r.out_line(), "0 1 2") << r.describe();
}

// ---------------------------------------------------------------------------------------------
// An inherited terminal cannot be used to inject input (TIOCSTI), whatever the high bits.
// ---------------------------------------------------------------------------------------------
class Terminal : public CapTest {};

TEST_P(Terminal, TiocstiRefusedOnInheritedControllingTerminal) {
  Pty pty;
  RunOptions run;
  run.stdin_fd = pty.slave();
  run.controlling_terminal = true;
  // Control: outside the sandbox the same ioctl on the same terminal is not refused with EPERM.
  RunResult control = run_command({tree.probe(), "tiocsti", "0"}, run);
  EXPECT_TRUE(control.exited(0)) << control.describe();
  EXPECT_NE(control.out_line(), "errno EPERM") << "control run: " << control.describe();
  LaunchOptions o;
  o.run = run;
  expect_probes(base_policy(),
                {
                    {{"tiocsti", "0"}, "errno EPERM"},
                    {{"tiocsti-high-bits", "0"}, "errno EPERM"},
                    {{"tiocgwinsz", "0"}, "ok"},  // other terminal ioctls stay
                },
                o);
}

TEST_P(Terminal, TiocstiRefusedOnInheritedTerminalDescriptor) {
  Pty pty;
  LaunchOptions o;
  o.run.stdin_fd = pty.slave();
  expect_probes(base_policy(),
                {
                    {{"tiocsti", "0"}, "errno EPERM"},
                    {{"tiocsti-high-bits", "0"}, "errno EPERM"},
                    {{"tiocgwinsz", "0"}, "ok"},
                },
                o);
}

// ---------------------------------------------------------------------------------------------
// The environment: clean, with TMPDIR, HOME, proxies only under egress-allowlist, no
// NO_PROXY/ALL_PROXY, OARBANK_BROKER only with the broker grant; the caller's never leaks.
// ---------------------------------------------------------------------------------------------
class Environment : public CapTest {
 protected:
  std::vector<std::string> defaults() const {
    return {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=" + tree.path("work"),
            "TMPDIR=" + tree.path("temp")};
  }
  std::vector<std::string> proxies() const {
    const std::string url = "http://127.0.0.1:" + std::to_string(proxy.port());
    return {"http_proxy=" + url, "https_proxy=" + url, "HTTP_PROXY=" + url, "HTTPS_PROXY=" + url,
            "NODE_USE_ENV_PROXY=1"};
  }
};

TEST_P(Environment, NetNoneIsCleanAndLeaksNothing) {
  // The launcher's caller holds SECRET_TOKEN, hostile proxies, TMPDIR, LD_LIBRARY_PATH...
  expect_probes(base_policy(), {
                                   {{"environ"}, lines(defaults())},
                                   {{"env", "SECRET_TOKEN"}, "(unset)"},
                                   {{"cwd"}, tree.path("work")},
                               });
}

TEST_P(Environment, BrokerGrantSetsOarbankBroker) {
  auto env = defaults();
  env.push_back("OARBANK_BROKER=" + broker_path);
  EXPECT_EQ(probe(with(base_policy(), "broker", true), {"environ"}), lines(env));
}

TEST_P(Environment, EgressAllowlistSetsProxiesButNoNoProxyOrAllProxy) {
  const auto p = egress_policy();
  if (!runs_or_refused(p, "net.egress-allowlist", 4)) return;
  auto env = defaults();
  for (const auto& e : proxies()) env.push_back(e);
  EXPECT_EQ(probe(p, {"environ"}), lines(env));
}

TEST_P(Environment, HomeAndTmpdirFollowThePolicy) {
  auto no_temp = base_policy();
  no_temp.erase("temp");
  EXPECT_EQ(probe(no_temp, {"environ"}), lines({"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
                                                "HOME=" + tree.path("work")}));
  auto no_work = base_policy();
  no_work.erase("work");
  expect_probes(no_work, {
                             {{"environ"},
                              lines({"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
                                     "HOME=" + tree.path("temp"), "TMPDIR=" + tree.path("temp")})},
                             {{"cwd"}, tree.path("temp")},
                         });
}

TEST_P(Environment, SetenvAddsButCannotOverrideWhatTheSandboxSets) {
  LaunchOptions o;
  o.setenv = {"FOO=bar", "PATH=/usr/bin"};
  auto env = defaults();
  env.erase(env.begin());  // PATH replaced
  env.push_back("PATH=/usr/bin");
  env.push_back("FOO=bar");
  EXPECT_EQ(probe(base_policy(), {"environ"}, o), lines(env));
  for (const char* refused :
       {"TMPDIR=/x", "NO_PROXY=*", "no_proxy=*", "ALL_PROXY=x", "all_proxy=x"}) {
    SCOPED_TRACE(refused);
    LaunchOptions bad;
    bad.setenv = {refused};
    const std::string marker = tree.path("work/ran");
    expect_launcher_failure(launch(base_policy(), {"write", marker}, bad), 64, {"--setenv"});
    EXPECT_FALSE(exists(marker));
  }
  if (abi() >= 4) {
    LaunchOptions bad;
    bad.setenv = {"https_proxy=http://evil.example:1"};
    expect_launcher_failure(launch(egress_policy(), {"true"}, bad), 64, {"--setenv https_proxy"});
  }
}

OARBANK_INSTANTIATE_CAPS(Identity);
OARBANK_INSTANTIATE_CAPS(Descriptors);
OARBANK_INSTANTIATE_CAPS(Terminal);
OARBANK_INSTANTIATE_CAPS(Environment);

}  // namespace
}  // namespace oarbank::it
