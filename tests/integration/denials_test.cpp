// Issue 14, "Why was I refused?": sandbox-run records every refusal of the module's seccomp
// filter (the filter hands it to the supervisor, which answers with the same errno), once per
// distinct denial with a count, naming the policy element that would allow it or the reason
// none can; in --result's "denials", and on stderr when the module fails or with --denials.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <thread>

#include "sandbox_fixture.hpp"

namespace oarbank::it {
namespace {

using namespace std::chrono_literals;

class Denials : public UncappedTest {
 protected:
  std::vector<std::string> env() const {
    auto e = launcher_environment();
    e.push_back("OARBANK_STATE_DIR=" + tree.path("state"));
    return e;
  }
  std::vector<std::string> argv(const std::string& run_id, const std::string& result,
                                const std::vector<std::string>& options,
                                const std::vector<std::string>& module,
                                const nlohmann::json& policy) {
    std::vector<std::string> a{OARBANK_AGENT_BINARY, "sandbox-run", "--config",
                               config_path,          "--id",        run_id,
                               "--result",           result};
    a.insert(a.end(), options.begin(), options.end());
    a.push_back(tree.write_json(run_id + ".json", policy));
    a.emplace_back("--");
    a.push_back(tree.probe());
    a.insert(a.end(), module.begin(), module.end());
    return a;
  }
  RunResult run(const std::vector<std::string>& options, const std::vector<std::string>& module,
                const nlohmann::json& policy) {
    RunOptions o;
    o.env = env();
    o.timeout = 20s;
    return run_command(argv(id, result_path(), options, module, policy), o);
  }
  std::string result_path() const { return tree.path("result.json"); }
  nlohmann::json result() const { return nlohmann::json::parse(read_file(result_path())); }

  // The denial of `operation` (and an object starting with `object`): exactly one.
  static nlohmann::json the_denial(const nlohmann::json& denials, const std::string& operation,
                                   const std::string& object = "") {
    nlohmann::json found;
    int matches = 0;
    for (const auto& d : denials) {
      if (d["operation"] == operation && d["object"].get<std::string>().starts_with(object)) {
        found = d;
        ++matches;
      }
    }
    EXPECT_EQ(matches, 1) << operation << " " << object << " in " << denials.dump();
    return found;
  }

  std::string id = unique_name("den");
};

TEST_F(Denials, EachSeccompRefusalIsRecordedOnceWithThePolicyChangeOrWhyNone) {
  // The refused calls answer as under sandbox-exec; the allowed work beside them (a file read,
  // a unix stream pair, getpid through the ioctl path) leaves no record.
  RunResult r = run({},
                    {"batch",
                     "listen",
                     ",",
                     "socket",
                     "netlink",
                     "raw",
                     ",",
                     "ptrace",
                     ",",
                     "socket",
                     "unix",
                     "stream",
                     ",",
                     "listen",
                     ",",
                     "read",
                     tree.path("bundle/bundle.txt"),
                     ",",
                     "socketpair",
                     "unix",
                     ",",
                     "tiocgwinsz",
                     "0",
                     ",",
                     "exit",
                     "3"},
                    base_policy());
  ASSERT_TRUE(r.exited(3)) << r.describe();
  EXPECT_EQ(r.out,
            "errno EPERM\nerrno EAFNOSUPPORT\nerrno EPERM\nerrno EAFNOSUPPORT\nerrno EPERM\nok\n"
            "ok\nerrno ENOTTY\n");
  const auto j = result();
  ASSERT_TRUE(j.contains("denials")) << j.dump();
  const auto& denials = j["denials"];
  EXPECT_EQ(denials.size(), 4U) << denials.dump();
  EXPECT_EQ(j["denial_diagnostics"]["syscalls"], "recorded");
  EXPECT_EQ(j["denial_diagnostics"]["dropped"], 0);

  const auto listen = the_denial(denials, "listen");
  EXPECT_EQ(listen["mechanism"], "seccomp");
  EXPECT_EQ(listen["error"], "EPERM");
  EXPECT_EQ(listen["count"], 2);
  EXPECT_TRUE(listen["allowed_by"].is_null());
  EXPECT_EQ(listen["reason"], "never listening");
  EXPECT_EQ(listen["executable"], tree.probe());
  EXPECT_GT(listen["pid"].get<int>(), 0);

  const auto netlink = the_denial(denials, "socket", "AF_NETLINK");
  EXPECT_EQ(netlink["object"], "AF_NETLINK SOCK_RAW");
  EXPECT_EQ(netlink["error"], "EAFNOSUPPORT");
  EXPECT_TRUE(netlink["allowed_by"].is_null());
  EXPECT_NE(netlink["reason"].get<std::string>().find("ever allowed"), std::string::npos);

  const auto ptrace = the_denial(denials, "ptrace");
  EXPECT_EQ(ptrace["error"], "EPERM");
  EXPECT_TRUE(ptrace["allowed_by"].is_null());
  EXPECT_NE(ptrace["object"].get<std::string>().find("PTRACE_ATTACH"), std::string::npos);

  const auto unix_socket = the_denial(denials, "socket", "AF_UNIX");
  EXPECT_NE(unix_socket["allowed_by"].get<std::string>().find("\"broker\": true"),
            std::string::npos);

  // The module failed: the summary is on stderr, one line per denial.
  EXPECT_NE(r.err.find("refused (seccomp): listen by " + tree.probe()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(", 2 times: no policy allows it: never listening"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("refused (seccomp): socket AF_UNIX SOCK_STREAM"), std::string::npos)
      << r.err;
}

TEST_F(Denials, TheSummaryOnSuccessOnlyWithTheFlag) {
  RunResult quiet = run({}, {"listen"}, base_policy());
  ASSERT_TRUE(quiet.exited(0)) << quiet.describe();
  EXPECT_EQ(quiet.out, "errno EPERM\n");
  EXPECT_EQ(quiet.err.find("refused"), std::string::npos) << quiet.err;
  EXPECT_EQ(result()["denials"].size(), 1U);

  id = unique_name("den");
  RunResult told = run({"--denials"}, {"listen"}, base_policy());
  ASSERT_TRUE(told.exited(0)) << told.describe();
  EXPECT_NE(told.err.find("refused (seccomp): listen"), std::string::npos) << told.err;

  // Nothing refused: an empty list, and nothing on stderr even with the flag.
  id = unique_name("den");
  RunResult clean = run({"--denials"}, {"true"}, base_policy());
  ASSERT_TRUE(clean.exited(0)) << clean.describe();
  EXPECT_EQ(clean.err.find("refused"), std::string::npos) << clean.err;
  EXPECT_EQ(result()["denials"], nlohmann::json::array());
}

TEST_F(Denials, UnderEgressTheInetSocketsAreAllowedAndUdpIsNamedWithoutAPolicyChange) {
  // no-inet: an IPv4 socket would be allowed by net egress-allowlist.
  RunResult none = run({}, {"socket", "inet", "stream"}, base_policy());
  ASSERT_TRUE(none.exited(0)) << none.describe();
  auto inet = the_denial(result()["denials"], "socket", "AF_INET");
  EXPECT_NE(inet["allowed_by"].get<std::string>().find("egress-allowlist"), std::string::npos);
  EXPECT_EQ(inet["object"], "AF_INET SOCK_STREAM");

  // egress-allowlist: a TCP socket is allowed (no record), UDP is refused to every policy.
  id = unique_name("den");
  RunResult egress = run({}, {"batch", "socket", "inet", "stream", ",", "socket", "inet", "dgram"},
                         egress_policy());
  ASSERT_TRUE(egress.exited(0)) << egress.describe();
  EXPECT_EQ(egress.out, "ok\nerrno EPROTONOSUPPORT\n");
  const auto denials = result()["denials"];
  ASSERT_EQ(denials.size(), 1U) << denials.dump();
  EXPECT_EQ(denials[0]["object"], "AF_INET SOCK_DGRAM");
  EXPECT_TRUE(denials[0]["allowed_by"].is_null());
  EXPECT_NE(denials[0]["reason"].get<std::string>().find("stream sockets only"), std::string::npos);
}

// The supervisor killed while the module runs: the kernel answers the filter's refusals
// ENOSYS from then on (the listener is gone), never lets them through.
TEST_F(Denials, ASupervisorKilledLeavesEveryRefusalARefusal) {
  const std::string out = tree.path("killed.out");
  const auto a = argv(id, result_path(), {},
                      {"batch", "listen", ",", "sleep-ms", "600", ",", "listen", ",", "socket",
                       "netlink", "raw", ",", "ptrace"},
                      base_policy());
  const auto env_strings = env();
  const pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(fd, 1);
    ::dup2(null, 2);
    exec_in_child(a, env_strings);
  }
  auto text = [&] { return exists(out) ? read_file(out) : std::string(); };
  auto lines = [&] {
    const std::string t = text();
    return std::count(t.begin(), t.end(), '\n');
  };
  // The first listen answered by the supervisor: it is serving; then it dies.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (lines() < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (lines() < 4 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(text(), "errno EPERM\nerrno ENOSYS\nerrno ENOSYS\nerrno ENOSYS\n");
  // The next start in this state directory removes what the killed run left.
  id = unique_name("den");
  EXPECT_TRUE(run({}, {"true"}, base_policy()).exited(0));
}

// Two modules refused at the same moment: each result holds its own denials only.
TEST_F(Denials, TwoModulesAtOnceSeeOnlyTheirOwn) {
  const std::string id_a = unique_name("den-a"), id_b = unique_name("den-b");
  const std::string result_a = tree.path("a.json"), result_b = tree.path("b.json");
  const auto env_strings = env();
  auto start = [&](const std::vector<std::string>& a) {
    pid_t pid = ::fork();
    if (pid == 0) {
      int null = ::open("/dev/null", O_RDWR);
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
      exec_in_child(a, env_strings);
    }
    return pid;
  };
  const auto argv_a = argv(id_a, result_a, {}, {"repeat", "200", "listen"}, base_policy());
  const auto argv_b =
      argv(id_b, result_b, {}, {"repeat", "200", "socket", "netlink", "raw"}, base_policy());
  const pid_t a = start(argv_a);
  const pid_t b = start(argv_b);
  int status_a = 0, status_b = 0;
  ASSERT_EQ(::waitpid(a, &status_a, 0), a);
  ASSERT_EQ(::waitpid(b, &status_b, 0), b);
  EXPECT_TRUE(WIFEXITED(status_a) && WEXITSTATUS(status_a) == 0) << status_a;
  EXPECT_TRUE(WIFEXITED(status_b) && WEXITSTATUS(status_b) == 0) << status_b;
  const auto ja = nlohmann::json::parse(read_file(result_a));
  const auto jb = nlohmann::json::parse(read_file(result_b));
  ASSERT_EQ(ja["denials"].size(), 1U) << ja.dump();
  ASSERT_EQ(jb["denials"].size(), 1U) << jb.dump();
  EXPECT_EQ(ja["denials"][0]["operation"], "listen");
  EXPECT_EQ(ja["denials"][0]["count"], 200);
  EXPECT_EQ(jb["denials"][0]["operation"], "socket");
  EXPECT_EQ(jb["denials"][0]["object"], "AF_NETLINK SOCK_RAW");
  EXPECT_EQ(jb["denials"][0]["count"], 200);
}

}  // namespace
}  // namespace oarbank::it
