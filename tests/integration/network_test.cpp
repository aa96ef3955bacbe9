// The network mechanism's integration tests (issue 11: one file per mechanism, so that a new
// network mechanism adds its tests here): net egress-allowlist and egress-any from inside the
// real sandboxed payload under every node cap (the "Mapping" rows of
// https://docs.codonic.dev/oarbank/spec/sandbox-linux), egress-any's refusal (70), and the
// module's own network namespace, the proxy and the relay under sandbox-run, egress-proxy and
// a bare sandbox-exec. Moved unchanged from mapping_test.cpp, exit_codes_test.cpp and
// sandbox_run_test.cpp; their suites (EgressAllowlist, EgressAny, Unenforceable, SandboxRun)
// keep their names.
#include <grp.h>
#include <netinet/tcp.h>

#include <fstream>

#include "launcher_exit.hpp"
#include "sandbox_run_fixture.hpp"
#include "sys/socket_owner.hpp"

namespace oarbank::it {
namespace {

// ---------------------------------------------------------------------------------------------
// Row: "net = egress-allowlist" — IPv4/IPv6 streams only (seccomp); Landlock ABI 4: TCP
// connect to the agent's proxy port alone, no bind. Below ABI 4 the policy is refused (70).
// ---------------------------------------------------------------------------------------------
class EgressAllowlist : public CapTest {};

TEST_P(EgressAllowlist, RefusedBelowAbi4) {
  const bool runs = runs_or_refused(egress_policy(), "net.egress-allowlist", 4);
  EXPECT_EQ(runs, abi() >= 4);
}

TEST_P(EgressAllowlist, ConnectToTheProxyPortAlone) {
  const auto p = egress_policy();
  if (!runs_or_refused(p, "net.egress-allowlist", 4)) return;
  TcpListener other;
  expect_probes(p, {
                       {{"connect", "127.0.0.1", std::to_string(proxy.port())}, kOk},
                       {{"connect", "127.0.0.1", std::to_string(other.port())}, kEacces},
                       {{"connect", "127.0.0.1", "1"}, kEacces},  // unfiltered: ECONNREFUSED
                   });
}

TEST_P(EgressAllowlist, LandlockRuleIsAPortNotAnAddress) {
  // The page's mechanism alone lets the proxy's port through on any address (docs/launcher.md,
  // "Egress: the module's own network namespace": as root the launcher adds a network namespace for
  // that, sandbox_run_test.cpp's ...ThroughItsRelay). Here 127.0.0.2 has nothing listening: the
  // connect passes Landlock and the kernel refuses it.
  const auto p = egress_policy();
  if (!runs_or_refused(p, "net.egress-allowlist", 4)) return;
  expect_probes(p,
                {
                    {{"connect", "127.0.0.2", std::to_string(proxy.port())}, "errno ECONNREFUSED"},
                    {{"connect", "127.0.0.2",
                      std::to_string(proxy.port() == 65535 ? 65534 : proxy.port() + 1)},
                     kEacces},
                });
}

TEST_P(EgressAllowlist, BindRefused) {
  const auto p = egress_policy();
  if (!runs_or_refused(p, "net.egress-allowlist", 4)) return;
  expect_probes(p, {
                       {{"bind", "127.0.0.1", "0"}, kEacces},
                       {{"bind", "127.0.0.1", std::to_string(proxy.port())}, kEacces},
                       {{"bind", "::1", "0"}, kEacces},
                   });
}

TEST_P(EgressAllowlist, StreamSocketsOnly) {
  const auto p = egress_policy();
  if (!runs_or_refused(p, "net.egress-allowlist", 4)) return;
  expect_probes(
      p, {
             {{"socket", "inet", "stream"}, kOk},
             {{"socket", "inet", "stream", "6"}, kOk},  // IPPROTO_TCP
             {{"socket", "inet6", "stream"}, kOk},
             {{"socket", "inet", "0x801"}, kOk},               // SOCK_STREAM|SOCK_NONBLOCK
             {{"socket", "inet", "dgram"}, kEprotonosupport},  // UDP
             {{"socket", "inet6", "dgram"}, kEprotonosupport},
             {{"socket", "inet", "0x80802"}, kEprotonosupport},   // SOCK_DGRAM|CLOEXEC|NONBLOCK
             {{"socket", "inet", "raw", "1"}, kEprotonosupport},  // raw ICMP
             {{"socket", "inet6", "raw", "58"}, kEprotonosupport},
             {{"socket", "inet", "seqpacket", "132"}, kEprotonosupport},
             {{"socket", "inet", "stream", "132"}, kEprotonosupport},  // SCTP
             {{"socket", "inet6", "stream", "132"}, kEprotonosupport},
             {{"socket", "inet", "stream", "262"}, kEprotonosupport},  // MPTCP
             {{"socket", "inet6", "stream", "262"}, kEprotonosupport},
             {{"socket", "unix", "stream"}, kEafnosupport},  // no broker grant
         });
}

TEST_P(EgressAllowlist, FastOpenRefused) {
  const auto p = egress_policy();
  if (!runs_or_refused(p, "net.egress-allowlist", 4)) return;
  TcpListener other;
  expect_probes(
      p, {
             {{"sendto-fastopen", "127.0.0.1", std::to_string(proxy.port())}, kEopnotsupp},
             {{"sendmsg-fastopen", "127.0.0.1", std::to_string(proxy.port())}, kEopnotsupp},
             {{"sendto-fastopen", "127.0.0.1", std::to_string(other.port())}, kEopnotsupp},
             {{"sendmsg-fastopen", "127.0.0.1", std::to_string(other.port())}, kEopnotsupp},
             {{"connect", "127.0.0.1", std::to_string(proxy.port())}, kOk},  // the way that stays
         });
}

// ---------------------------------------------------------------------------------------------
// Row: "net = egress-any" — unavailable: refused with 70 before anything runs.
// ---------------------------------------------------------------------------------------------
class EgressAny : public CapTest {};

TEST_P(EgressAny, RefusedBeforeRunningAnything) {
  auto p = with(base_policy(), "net", "egress-any");
  const std::string marker = tree.path("work/ran");
  RunResult r = launch(p, {"write", marker});
  expect_launcher_failure(r, 70, {"\"net.egress-any\"", "Landlock filters ports, not addresses"});
  EXPECT_FALSE(exists(marker));
}

// --- 70: egress-any cannot be enforced (exit_codes_test.cpp's Unenforceable suite) -----------

TEST_F(Unenforceable, EgressAny) {
  expect_launcher_failure(launch(with(base_policy(), "net", "egress-any"), {"write", marker()}), 70,
                          {"\"net.egress-any\""});
  expect_nothing_ran();
}

// --- Egress: the module's own network namespace, the proxy inside it (issue 5) -------------

std::string ask_proxy(int port, const std::string& request);  // below, with egress-proxy

TEST_F(SandboxRun, AnEgressModuleHasOnlyLoopbackWithTheProxyOnIt) {
  if (!running_as_root()) GTEST_SKIP() << "network namespaces need root";
  const std::string port = std::to_string(proxy.port());
  const std::string log = tree.path("proxy.log");
  RunResult r =
      run({"--proxy-log", log},
          {"/bin/sh", "-c",
           "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; " + tree.probe() +
               " connect 127.0.0.1 " + port + "; " + tree.probe() + " connect 127.0.0.1 " +
               std::to_string(proxy.port() == 65535 ? 65534 : proxy.port() + 1)},
          tree.write_json("egress.json", egress_policy()));
  EXPECT_TRUE(r.exited(0)) << r.describe();
  // Only lo; the proxy answers on its port (inside the namespace: the test's own listener on
  // the node's 127.0.0.1 is not reachable from there); any other port is Landlock's EACCES.
  EXPECT_EQ(r.out, "lo\nok\nerrno EACCES\n") << r.describe();
  expect_nothing_left();
}

TEST_F(SandboxRun, AnIpv6ProxyListenerServesTheModuleInItsNamespace) {
  if (!running_as_root()) GTEST_SKIP() << "network namespaces need root";
  if (!exists("/proc/sys/net/ipv6")) GTEST_SKIP() << "no IPv6 in this kernel";
  if (!exists("/usr/bin/curl"))
    GTEST_SKIP() << "needs curl (the kernel matrix's guests have busybox only)";
  // proxy_listen on [::1]: the listener is made on the namespace's IPv6 loopback, the proxy
  // variables name it in brackets, and a real client (curl) is answered by the proxy there.
  auto config = node_config();
  const std::string port = std::to_string(proxy.port());
  config["proxy_listen"] = "[::1]:" + port;
  config_path = tree.write_json("agent-v6.json", config);
  RunResult r =
      run({},
          {"/bin/sh", "-c",
           "echo \"$https_proxy\"; " + tree.probe() + " connect ::1 " + port + "; " + tree.probe() +
               " connect 127.0.0.1 " + port +
               "; /usr/bin/curl -s -o /dev/null -w '%{http_connect}\\n' https://192.0.2.7/; true"},
          tree.write_json("egress.json", egress_policy()));
  EXPECT_TRUE(r.exited(0)) << r.describe();
  // 127.0.0.1 on the same port: allowed by Landlock's port rule, but nothing listens there.
  EXPECT_EQ(r.out, "http://[::1]:" + port + "\nok\nerrno ECONNREFUSED\n403\n") << r.describe();
  expect_nothing_left();
}

TEST_F(SandboxRun, UnprivilegedEgressModulesEachGetAProxyPortOfTheirOwn) {
  if (!running_as_root()) GTEST_SKIP() << "runs sandbox-run as another user (needs root)";
  if (kernel_landlock_abi() < 6)
    GTEST_SKIP() << "unprivileged sandbox-run needs Landlock ABI 6 (signal scoping)";
  // Without a namespace of its own, each module has its own listener on a port the kernel
  // picks: two modules run side by side, each reaches its own proxy port and not the other's.
  const uid_t user = 4242;
  const std::string user_state = tree.path("user-state");
  ASSERT_EQ(::mkdir(user_state.c_str(), 0700), 0);
  ASSERT_EQ(::chown(user_state.c_str(), user, user), 0);
  auto p = egress_policy();
  for (const char* mine : {"work", "temp", "data"}) p.erase(mine);  // the module user's, not 4242's
  const std::string policy_path = tree.write_json("egress-user.json", p);
  auto port_only = node_config();
  port_only["accept_port_only_egress"] = true;  // unprivileged: no namespace (issue 10)
  config_path = tree.write_json("agent-port-only.json", port_only);
  const std::string first_log = user_state + "/first-proxy.log";
  auto user_env = env();
  user_env.back() = "OARBANK_STATE_DIR=" + user_state;
  const std::string first_out = tree.path("first.out");
  // The first module says its port and stays while the second tries it.
  std::vector<std::string> first_argv = {OARBANK_AGENT_BINARY,
                                         "sandbox-run",
                                         "--config",
                                         config_path,
                                         "--id",
                                         id + "-a",
                                         "--proxy-log",
                                         first_log,
                                         policy_path,
                                         "--",
                                         "/bin/sh",
                                         "-c",
                                         "p=${https_proxy##*:}; echo \"$p\"; " + tree.probe() +
                                             " http-connect 127.0.0.1 \"$p\" 192.0.2.9:443; "
                                             "exec sleep 30"};
  Background first(first_argv, user_env, first_out, std::make_pair(user, static_cast<gid_t>(user)));
  std::string first_port;
  ASSERT_TRUE(eventually([&] {
    // Its output shares the file with sandbox-run's line about the missing cgroup.
    std::istringstream out(read_if_there(first_out));
    for (std::string line; std::getline(out, line);) {
      if (!line.empty() && line.find_first_not_of("0123456789") == std::string::npos)
        first_port = line;
    }
    return !first_port.empty();
  })) << read_if_there(first_out);
  RunOptions o;
  o.env = user_env;
  o.user = std::make_pair(user, static_cast<gid_t>(user));
  RunResult second =
      run_command({OARBANK_AGENT_BINARY, "sandbox-run", "--config", config_path, "--id", id + "-b",
                   policy_path, "--", "/bin/sh", "-c",
                   "p=${https_proxy##*:}; echo \"$p\"; " + tree.probe() +
                       " connect 127.0.0.1 \"$p\"; " + tree.probe() + " connect 127.0.0.1 " +
                       first_port + "; " + tree.probe() + " connect ::1 " + first_port + "; " +
                       tree.probe() + " sendto-fastopen 127.0.0.1 " + first_port},
                  o);
  EXPECT_TRUE(second.exited(0)) << second.describe();
  const auto nl = second.out.find('\n');
  ASSERT_NE(nl, std::string::npos) << second.describe();
  const std::string second_port = second.out.substr(0, nl);
  EXPECT_NE(second_port, first_port);
  EXPECT_NE(second_port, std::to_string(proxy.port()))
      << "the configured port is for egress-proxy alone";
  // The other module's port by every route: IPv4, IPv6, and a TCP Fast Open send (refused
  // by the filter whatever the port).
  EXPECT_EQ(second.out.substr(nl + 1), "ok\nerrno EACCES\nerrno EACCES\nerrno EOPNOTSUPP\n")
      << second.describe();
  // The first module's port listens in the node's namespace, where any local process can
  // connect: only the module's own processes are admitted. Another process of the same user
  // outside the module, and root, are answered 403 and closed before their request is read;
  // the module's own request was judged by its allowlist (a 403 too, for 192.0.2.9).
  EXPECT_TRUE(eventually([&] {
    return read_if_there(first_out).find("HTTP/1.1 403") != std::string::npos;
  })) << read_if_there(first_out);
  RunResult same_user =
      run_command({tree.probe(), "http-connect", "127.0.0.1", first_port, "192.0.2.10:443"}, o);
  EXPECT_EQ(same_user.out, "HTTP/1.1 403\n") << same_user.describe();
  const std::string answer = ask_proxy(std::atoi(first_port.c_str()),
                                       "CONNECT 192.0.2.11:443 HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(answer.substr(0, 12), "HTTP/1.1 403") << answer;
  EXPECT_NE(answer.find("not made by one of the module's processes"), std::string::npos) << answer;
  EXPECT_TRUE(eventually([&] {
    const std::string lines = read_if_there(first_log);
    std::size_t refused = 0;
    for (std::size_t at = 0;
         (at = lines.find("not made by one of the module's processes", at)) != std::string::npos;
         ++at) {
      ++refused;
    }
    return refused == 2 && lines.find("192.0.2.9:443") != std::string::npos;
  })) << read_if_there(first_log);
  const std::string lines = read_if_there(first_log);
  EXPECT_EQ(lines.find("192.0.2.10"), std::string::npos) << lines;
  EXPECT_EQ(lines.find("192.0.2.11"), std::string::npos) << lines;
  ::kill(first.pid(), SIGTERM);
  EXPECT_EQ(first.wait(), 128 + SIGTERM) << read_if_there(first_out);
}

// --- egress-proxy: the same proxy as a standalone service, for a bare sandbox-exec ----------

// Sends `request` to 127.0.0.1:`port` and returns what comes back until the proxy closes.
std::string ask_proxy(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0)
      answer.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return answer;
}

TEST_F(SandboxRun, TheStandaloneEgressProxyJudgesByThePolicyAndStopsOnSigterm) {
  int port = 0;
  {
    TcpListener probe;  // a free port, given back at once
    port = probe.port();
  }
  const std::string log = tree.path("egress-proxy.log");
  const std::string output = tree.path("egress-proxy.out");
  Background proxy_service({OARBANK_AGENT_BINARY, "egress-proxy", "--config", config_path,
                            "--listen", "127.0.0.1:" + std::to_string(port), "--id", "it-module",
                            "--log", log, tree.write_json("egress.json", egress_policy())},
                           env(), output);
  std::string answer;
  ASSERT_TRUE(eventually([&] {
    answer = ask_proxy(port, "CONNECT 192.0.2.7:443 HTTP/1.1\r\nHost: 192.0.2.7:443\r\n\r\n");
    return !answer.empty();
  })) << read_if_there(output);
  EXPECT_EQ(answer.substr(0, 12), "HTTP/1.1 403") << answer;
  EXPECT_TRUE(eventually([&] {
    const std::string lines = read_if_there(log);
    return lines.find("\"module\":\"it-module\"") != std::string::npos &&
           lines.find("\"verdict\":\"refuse\"") != std::string::npos;
  })) << read_if_there(log);
  // Its tunnels take descriptors (two sockets, and two pipes while bytes flow): the soft
  // limit is raised to the hard one.
  std::istringstream limits(read_file("/proc/" + std::to_string(proxy_service.pid()) + "/limits"));
  std::string line;
  std::string soft, hard;
  while (std::getline(limits, line)) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream fields(line.substr(std::string("Max open files").size()));
    fields >> soft >> hard;
  }
  EXPECT_FALSE(soft.empty());
  EXPECT_EQ(soft, hard);
  ::kill(proxy_service.pid(), SIGTERM);
  EXPECT_EQ(proxy_service.wait(), 0) << read_if_there(output);
  EXPECT_EQ(read_if_there(output), "");
  // A policy without egress-allowlist has nothing to proxy: a usage error, one line.
  RunResult r = run_command(
      {OARBANK_AGENT_BINARY, "egress-proxy", "--config", config_path, "--listen",
       "127.0.0.1:" + std::to_string(port), policy()},
      RunOptions{
          .env = env(), .stdin_fd = {}, .controlling_terminal = false, .user = {}, .timeout = 10s});
  EXPECT_TRUE(r.exited(64)) << r.describe();
  EXPECT_EQ(r.err_line_count(), 1U) << r.describe();
}

// --- Egress only through the proxy, in every launch mode (issue 10) -------------------------

// A TCP listener at host:port in the test's (the node's) namespace; -1 when that address
// cannot be bound here (no IPv6, say).
int listen_at(const std::string& host, int port) {
  sockaddr_storage address{};
  socklen_t length = 0;
  int family = AF_INET;
  if (host.find(':') != std::string::npos) {
    family = AF_INET6;
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(port));
    if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) != 1) return -1;
    length = sizeof *v6;
  } else {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(port));
    if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) != 1) return -1;
    length = sizeof *v4;
  }
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 || ::listen(fd, 8) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A non-loopback IPv4 address of this machine, "" when it has none.
std::string node_address() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* entry = list; entry != nullptr && found.empty(); entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET ||
        (entry->ifa_flags & IFF_LOOPBACK) != 0 || (entry->ifa_flags & IFF_UP) == 0) {
      continue;
    }
    char text[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(entry->ifa_addr)->sin_addr, text,
                sizeof text);
    found = text;
  }
  ::freeifaddrs(list);
  return found;
}

// Gone, or a zombie waiting for its reaper (pid 1 here reaps at its own pace).
bool process_gone(pid_t pid) {
  const std::string stat = read_if_there("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close == std::string::npos || stat.compare(close + 1, 3, " Z ") == 0;
}

// Whether any process is in the network namespace `link` ("net:[4026532245]").
bool network_namespace_in_use(const std::string& link) {
  for (const auto& entry : list_dir("/proc")) {
    if (entry.find_first_not_of("0123456789") != std::string::npos) continue;
    char target[64];
    const ssize_t n = ::readlink(("/proc/" + entry + "/ns/net").c_str(), target, sizeof target);
    if (n > 0 && std::string(target, static_cast<std::size_t>(n)) == link) return true;
  }
  return false;
}

bool sock_diag_answers();

TEST_F(SandboxRun, ABareSandboxExecEgressModuleReachesTheProxyAloneThroughItsRelay) {
  if (!running_as_root()) GTEST_SKIP() << "network namespaces need root";
  if (kernel_landlock_abi() < 4) GTEST_SKIP() << "egress-allowlist needs Landlock ABI 4";
  int port = 0;
  {
    TcpListener probe;  // a free port, given back at once
    port = probe.port();
  }
  const std::string p = std::to_string(port);
  auto config = node_config();
  config["proxy_listen"] = "127.0.0.1:" + p;
  config_path = tree.write_json("agent-relay.json", config);
  const std::string policy_file = tree.write_json("egress.json", egress_policy());
  if (!sock_diag_answers()) {
    // The relay could not check whose proxy it reached: fail closed, named (session 17).
    RunOptions o;
    o.env = env();
    RunResult r = run_command(
        {agent, "sandbox-exec", "--config", config_path, policy_file, "--", "/bin/true"}, o);
    expect_launcher_failure(r, 70, {"step network failed", "NETLINK_SOCK_DIAG"});
    return;
  }
  // The real proxy on proxy_listen, as a node runs it for bare sandbox-exec modules.
  const std::string log = tree.path("egress-proxy.log");
  const std::string output = tree.path("egress-proxy.out");
  Background egress_proxy({agent, "egress-proxy", "--config", config_path, "--id", "it-relay",
                           "--log", log, policy_file},
                          env(), output);
  ASSERT_TRUE(eventually([&] { return !ask_proxy(port, "GET / HTTP/1.1\r\n\r\n").empty(); }))
      << read_if_there(output);
  // What else listens on the proxy's port: the page's port rule alone lets the module reach
  // all of these. The test itself reaches them (so a refusal below is the namespace's).
  std::vector<int> others;
  std::string script;
  std::string expected;
  auto try_address = [&](const std::string& listen, const std::string& connect,
                         const std::string& refusal) {
    const int fd = listen_at(listen, port);
    if (fd < 0) return;
    others.push_back(fd);
    script += tree.probe() + " connect " + connect + " " + p + "; ";
    expected += refusal + "\n";
  };
  try_address("127.0.0.2", "127.0.0.2", "errno ECONNREFUSED");
  try_address("::1", "::1", "errno ECONNREFUSED");
  try_address("127.0.0.3", "::ffff:127.0.0.3", "errno ECONNREFUSED");
  const std::string host = node_address();
  if (!host.empty()) try_address(host, host, "errno ENETUNREACH");
  ASSERT_GE(others.size(), 2U);
  RunResult control = run_command({tree.probe(), "connect", "127.0.0.2", p});
  EXPECT_EQ(control.out, "ok\n") << control.describe();
  // Then the proxy through the relay (a 403 for a destination not on the list), the module's
  // namespace, and the relay: the module's process group's oarbank-relay, its uid, no_new_privs
  // and effective capabilities.
  script += tree.probe() + " http-connect 127.0.0.1 " + p + " 192.0.2.9:443; ";
  script +=
      "readlink /proc/self/ns/net; read -r me rest < /proc/self/stat; "
      "read -r x1 x2 x3 x4 group rest < /proc/self/stat; "
      "for d in /proc/[0-9]*; do read -r pid comm state ppid pgrp rest < $d/stat 2>/dev/null || "
      "continue; [ \"$comm\" = '(oarbank-relay)' ] && [ \"$pgrp\" = \"$group\" ] || continue; "
      "echo relay $pid $(grep -E '^(Uid|NoNewPrivs|CapEff):' $d/status | tr -s '\\t' ' ' | "
      "tr '\\n' ' '); done";
  RunOptions o;
  o.env = env();
  RunResult r = run_command(
      {agent, "sandbox-exec", "--config", config_path, policy_file, "--", "/bin/sh", "-c", script},
      o);
  for (int fd : others) ::close(fd);
  ASSERT_TRUE(r.exited(0)) << r.describe();
  ASSERT_EQ(r.out.substr(0, expected.size()), expected) << r.describe();
  std::istringstream rest(r.out.substr(expected.size()));
  std::string answer, netns, relay_line;
  std::getline(rest, answer);
  std::getline(rest, netns);
  std::getline(rest, relay_line);
  EXPECT_EQ(answer, "HTTP/1.1 403") << r.describe();
  EXPECT_EQ(netns.rfind("net:[", 0), 0U) << r.describe();
  const std::string uid = std::to_string(module_uid());
  EXPECT_EQ(relay_line.substr(relay_line.find(" Uid: ")),
            " Uid: " + uid + " " + uid + " " + uid + " " + uid +
                " CapEff: 0000000000000000 NoNewPrivs: 1")
      << r.describe();
  const pid_t relay = static_cast<pid_t>(std::atoi(relay_line.substr(6).c_str()));
  ASSERT_GT(relay, 0) << r.describe();
  // The proxy judged it, under its id.
  EXPECT_TRUE(eventually([&] {
    const std::string lines = read_if_there(log);
    return lines.find("\"module\":\"it-relay\"") != std::string::npos &&
           lines.find("192.0.2.9:443") != std::string::npos;
  })) << read_if_there(log);
  // Nothing left: the relay ends with the module, and with it the namespace.
  EXPECT_TRUE(eventually([&] { return process_gone(relay); })) << "relay " << relay << " left";
  EXPECT_TRUE(eventually([&] { return !network_namespace_in_use(netns); })) << netns;
  // sandbox-exec of a module that is not an egress module makes no relay and no namespace.
  RunResult plain = run_command({agent, "sandbox-exec", "--config", config_path, policy(), "--",
                                 "/bin/sh", "-c", "readlink /proc/self/ns/net"},
                                o);
  char own[64];
  const ssize_t n = ::readlink("/proc/self/ns/net", own, sizeof own);
  EXPECT_EQ(plain.out, std::string(own, static_cast<std::size_t>(std::max<ssize_t>(n, 0))) + "\n")
      << plain.describe();
  ::kill(egress_proxy.pid(), SIGTERM);
  EXPECT_EQ(egress_proxy.wait(), 0) << read_if_there(output);
}

// A process of another user that listens at `port` (on 127.0.0.1, or dual-stack on [::]:
// IPv4 connections too) and answers every connection as a proxy that lets everything through:
// what any local user could do on the unprivileged proxy port while no root proxy listens
// there. `defer`: TCP_DEFER_ACCEPT, under which the far end of a connection stays a request
// socket (reported as uid 0) until data comes.
pid_t rogue_proxy(int port, uid_t uid, bool dual_stack, bool defer) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 ||
        ::setresuid(uid, uid, uid) != 0) {
      ::_exit(1);
    }
    const int listener = ::socket(dual_stack ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
    int one = 1, zero = 0, seconds = 5;
    ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (defer) ::setsockopt(listener, IPPROTO_TCP, TCP_DEFER_ACCEPT, &seconds, sizeof seconds);
    sockaddr_storage address{};
    socklen_t length = 0;
    if (dual_stack) {
      ::setsockopt(listener, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
      v6->sin6_family = AF_INET6;
      v6->sin6_port = htons(static_cast<std::uint16_t>(port));
      length = sizeof *v6;
    } else {
      auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
      v4->sin_family = AF_INET;
      v4->sin_port = htons(static_cast<std::uint16_t>(port));
      v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      length = sizeof *v4;
    }
    if (::bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(listener, 8) != 0) {
      ::_exit(1);
    }
    [[maybe_unused]] auto w = ::write(ready[1], "r", 1);
    ::close(ready[1]);
    for (;;) {
      const int client = ::accept(listener, nullptr, nullptr);
      if (client < 0) continue;
      constexpr char kYes[] = "HTTP/1.1 200 Connection established\r\n\r\n";
      [[maybe_unused]] auto n = ::write(client, kYes, sizeof kYes - 1);
      ::close(client);
    }
  }
  ::close(ready[1]);
  char byte = 0;
  const bool up = ::read(ready[0], &byte, 1) == 1;
  ::close(ready[0]);
  if (!up && pid > 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return -1;
  }
  return pid;
}

void stop_rogue(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

// Whether this kernel says who listens (sock_diag's inet_diag, else /proc/self/net/tcp: the
// kernel matrix's guests boot without modules, and their kernels have inet_diag as one).
bool sock_diag_answers() {
  TcpListener listener;
  sockaddr_storage address{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
  v4->sin_family = AF_INET;
  v4->sin_port = htons(static_cast<std::uint16_t>(listener.port()));
  v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return tcp_listener_owner(address).has_value();
}

// Attack reviews (session 16, twice): a bare root sandbox-exec's relay joined the module to
// whatever listened at proxy_listen, an unprivileged port: with no root proxy there, another
// local user listening on it was the module's proxy for every destination. Refused at the
// launch (70, naming proxy_listen and the owner), a dual-stack [::] listener too; and, for a
// listener that appears later, per connection, one that defers its accept too.
TEST_F(SandboxRun, AnotherUsersListenerOnProxyListenIsNeverTheModulesProxy) {
  if (!running_as_root()) GTEST_SKIP() << "network namespaces need root";
  if (kernel_landlock_abi() < 4) GTEST_SKIP() << "egress-allowlist needs Landlock ABI 4";
  if (!sock_diag_answers()) GTEST_SKIP() << "no socket owners from this kernel: relays are refused";
  int port = 0;
  {
    TcpListener probe;
    port = probe.port();
  }
  const std::string p = std::to_string(port);
  auto config = node_config();
  config["proxy_listen"] = "127.0.0.1:" + p;
  config_path = tree.write_json("agent-rogue.json", config);
  const auto policy_json = egress_policy();
  const std::string policy_file = tree.write_json("egress.json", policy_json);
  const std::string work = policy_json["work"].get<std::string>();
  RunOptions o;
  o.env = env();
  // Later: the module starts while nothing listens, then another user's listener appears.
  for (bool defer : {false, true}) {
    SCOPED_TRACE(defer ? "TCP_DEFER_ACCEPT" : "plain");
    const std::string started = work + "/started";
    const std::string go = work + "/go";
    ::unlink(started.c_str());
    ::unlink(go.c_str());
    const std::string output = tree.path("late.out");
    Background late(
        {agent, "sandbox-exec", "--config", config_path, policy_file, "--", "/bin/sh", "-c",
         ": > " + started + "; while [ ! -e " + go + " ]; do sleep 0.05; done; " + tree.probe() +
             " http-connect 127.0.0.1 " + p + " 192.0.2.9:443"},
        o.env, output);
    ASSERT_TRUE(eventually([&] { return ::access(started.c_str(), F_OK) == 0; }))
        << read_if_there(output);
    const pid_t rogue = rogue_proxy(port, 65533, false, defer);
    ASSERT_GT(rogue, 0);
    { std::ofstream(go) << ""; }
    EXPECT_EQ(late.wait(), 0) << read_if_there(output);
    stop_rogue(rogue);
    // The relay drops the connection it made (a reset, or the end before any answer).
    const std::string answer = read_if_there(output);
    EXPECT_TRUE(answer == "closed\n" || answer == "errno ECONNRESET\n") << answer;
  }
  // Now: the launch sees it and refuses, a dual-stack listener on [::] too.
  for (bool dual_stack : {false, true}) {
    SCOPED_TRACE(dual_stack ? "[::]" : "127.0.0.1");
    const pid_t rogue = rogue_proxy(port, 65533, dual_stack, false);
    ASSERT_GT(rogue, 0);
    RunResult r = run_command({agent, "sandbox-exec", "--config", config_path, policy_file, "--",
                               tree.probe(), "http-connect", "127.0.0.1", p, "192.0.2.9:443"},
                              o);
    stop_rogue(rogue);
    expect_launcher_failure(
        r, 70, {"step network failed", "proxy_listen 127.0.0.1:" + p, "uid 65533, not root's"});
  }
}

TEST_F(SandboxRun, UnprivilegedEgressIsRefusedUnlessTheNodeAcceptsPortOnly) {
  if (!running_as_root()) GTEST_SKIP() << "runs the agent as another user (needs root)";
  if (kernel_landlock_abi() < 6)
    GTEST_SKIP() << "unprivileged sandbox-run needs Landlock ABI 6 (signal scoping)";
  const uid_t user = 4242;
  const std::string user_state = tree.path("user-state");
  ASSERT_EQ(::mkdir(user_state.c_str(), 0700), 0);
  ASSERT_EQ(::chown(user_state.c_str(), user, user), 0);
  auto egress = egress_policy();
  for (const char* mine : {"work", "temp", "data"}) egress.erase(mine);
  const std::string policy_file = tree.write_json("egress-user.json", egress);
  auto accepting = node_config();
  accepting["accept_port_only_egress"] = true;
  const std::string accepting_config = tree.write_json("agent-port-only.json", accepting);
  RunOptions o;
  o.env = env();
  o.env.back() = "OARBANK_STATE_DIR=" + user_state;
  o.user = std::make_pair(user, static_cast<gid_t>(user));
  const std::string port = std::to_string(proxy.port());
  auto as_user = [&](const std::string& command, const std::string& config,
                     std::vector<std::string> tail) {
    std::vector<std::string> argv{agent, command, "--config", config};
    argv.insert(argv.end(), tail.begin(), tail.end());
    return run_command(argv, o);
  };
  const std::vector<std::string> module = {policy_file, "--",        tree.probe(),
                                           "connect",   "127.0.0.1", port};
  // Not accepted: every launch mode refuses, one line naming the row and the key; the check
  // says the same.
  for (const char* command : {"sandbox-exec", "sandbox-run"}) {
    RunResult r = as_user(command, config_path, module);
    EXPECT_TRUE(r.exited(70)) << command << ": " << r.describe();
    EXPECT_EQ(r.out, "") << command;
    // sandbox-run says first that it has no cgroup of its own here (a process group only).
    const std::string last = r.err.substr(r.err.rfind('\n', r.err.size() - 2) + 1);
    EXPECT_EQ(r.err_line_count(), std::string(command) == "sandbox-exec" ? 1U : 2U) << r.describe();
    EXPECT_EQ(last.rfind(std::string("oarbank-agent ") + command + ": ", 0), 0U) << r.describe();
    EXPECT_NE(r.err.find("\"net.egress-allowlist\""), std::string::npos) << r.describe();
    EXPECT_NE(r.err.find("accept_port_only_egress"), std::string::npos) << r.describe();
  }
  RunResult check = as_user("sandbox-check", config_path, {policy_file});
  EXPECT_TRUE(check.exited(70)) << check.describe();
  EXPECT_NE(check.err.find("accept_port_only_egress"), std::string::npos) << check.describe();
  // Accepted: both run it, by the port rule alone (sandbox-exec: proxy_listen's port).
  RunResult exec = as_user("sandbox-exec", accepting_config, module);
  EXPECT_TRUE(exec.exited(0)) << exec.describe();
  EXPECT_EQ(exec.out, "ok\n") << exec.describe();
  RunResult run = as_user("sandbox-run", accepting_config,
                          {policy_file, "--", "/bin/sh", "-c",
                           tree.probe() + " connect 127.0.0.1 \"${https_proxy##*:}\""});
  EXPECT_TRUE(run.exited(0)) << run.describe();
  EXPECT_EQ(run.out, "ok\n") << run.describe();
  check = as_user("sandbox-check", accepting_config, {policy_file});
  EXPECT_TRUE(check.exited(0)) << check.describe();
  // The report says which, on the row itself.
  auto row_of = [](const RunResult& report) {
    nlohmann::json found = {{"status", report.describe()}, {"reason", ""}};
    const auto document = nlohmann::json::parse(report.out, nullptr, false);
    if (document.is_object() && document.contains("rows")) {
      for (const auto& row : document["rows"]) {
        if (row["row"] == "net.egress-allowlist") found = row;
      }
    }
    return found;
  };
  const auto port_only = row_of(as_user("sandbox-report", accepting_config, {"--json"}));
  EXPECT_EQ(port_only["status"], "port only") << port_only.dump();
  EXPECT_NE(port_only["reason"].get<std::string>().find("shared"), std::string::npos);
  const auto refused = row_of(as_user("sandbox-report", config_path, {"--json"}));
  EXPECT_EQ(refused["status"], "unavailable") << refused.dump();
  RunOptions root_options;
  root_options.env = env();
  const auto as_root = row_of(
      run_command({agent, "sandbox-report", "--config", config_path, "--json"}, root_options));
  EXPECT_EQ(as_root["status"], "enforced") << as_root.dump();
  EXPECT_NE(as_root["reason"].get<std::string>().find("network namespace"), std::string::npos);
}

OARBANK_INSTANTIATE_CAPS(EgressAllowlist);
OARBANK_INSTANTIATE_CAPS(EgressAny);

}  // namespace
}  // namespace oarbank::it
