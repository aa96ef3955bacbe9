#include "report/verify.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <optional>

#include "sys/error.hpp"
#include "sys/unique_fd.hpp"

extern char** environ;

namespace oarbank {
namespace {

namespace fs = std::filesystem;

// The verification could not be set up (the project's convention, sys/error.hpp): an Error of
// kind Internal (exit 70: fail closed), with the errno of the call that failed.
Error setup_error(const std::string& what) {
  const int err = errno;
  return Error(ErrorKind::Internal, std::nullopt, std::string(),
               "verification setup failed: " + what + (err != 0 ? ": " + errno_text(err) : ""),
               err);
}

struct ProbeResult {
  int exit_code = -1;
  std::string output;  // the probe's one line: "ok" or "errno ENAME"
};

// A TCP listener on 127.0.0.1 (or `host`, in host order) with a port the kernel picks (or
// `port`).
struct Listener {
  UniqueFd fd;
  int port = 0;
};

Listener listen_tcp(std::uint32_t host = INADDR_LOOPBACK, int port = 0) {
  Listener l;
  l.fd.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(host);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  socklen_t len = sizeof addr;
  if (!l.fd.valid() || ::bind(l.fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(l.fd.get(), 8) != 0 ||
      ::getsockname(l.fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw setup_error("cannot listen on 127.0.0.1 for the egress probe");
  }
  l.port = ntohs(addr.sin_port);
  return l;
}

// An abstract unix socket outside the sandbox, which IPC scoping must keep the module from.
// Its name is the kernel's (autobind: bound with no name, five hex digits chosen among the
// free ones): a fixed one ("oarbank-verify-PID", session 16's review) could be bound first by
// any local user, and every --verify then failed its setup.
UniqueFd listen_abstract(std::string& name) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  socklen_t len = sizeof addr.sun_family;
  if (!fd.valid() || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(fd.get(), 8) != 0) {
    throw setup_error("cannot listen on an abstract unix socket for the IPC probe");
  }
  len = sizeof addr;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      len <= offsetof(sockaddr_un, sun_path) + 1 || addr.sun_path[0] != '\0') {
    throw setup_error("cannot read the name of the IPC probe's abstract unix socket");
  }
  name.assign(addr.sun_path + 1, len - offsetof(sockaddr_un, sun_path) - 1);
  return fd;
}

// A process of the module user's own uid, outside the sandbox: without Landlock's signal
// scope the module could signal it, so refusing shows the scope at work (not DAC).
pid_t start_sleeper(const NodeConfig& config) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0) {
      if (::setresgid(config.module_gid, config.module_gid, config.module_gid) != 0 ||
          ::setresuid(config.module_uid, config.module_uid, config.module_uid) != 0) {
        ::_exit(1);
      }
    }
    ::pause();
    ::_exit(0);
  }
  return pid;
}

class VerifyTree {
 public:
  VerifyTree(const NodeConfig& config, int proxy_port) {
    char pattern[] = "/tmp/oarbank-verify-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw setup_error("mkdtemp");
    root_ = pattern;
    ::chmod(root_.c_str(), 0755);
    fs::create_directories(root_ / "bundle");
    fs::create_directories(root_ / "work");
    fs::create_directories(root_ / "outside");
    // The module is this very binary, copied where the module user can execute it.
    char self[4096];
    ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) throw setup_error("cannot read /proc/self/exe");
    self[n] = '\0';
    self_ = self;
    fs::copy_file(self_, agent(), fs::copy_options::overwrite_existing);
    fs::permissions(agent(), fs::perms(0755));
    std::ofstream(root_ / "outside" / "secret") << "secret\n";
    fs::permissions(root_ / "outside" / "secret", fs::perms(0644));
    if (::geteuid() == 0 &&
        ::chown((root_ / "work").c_str(), config.module_uid, config.module_gid) != 0) {
      throw setup_error("cannot chown the probe's work directory");
    }
    // Whatever the umask: a work directory others can write is refused (the directory rule).
    fs::permissions(root_ / "work", fs::perms(0755));
    auto node = node_config_to_json(config);
    node["proxy_listen"] = fmt::format("127.0.0.1:{}", proxy_port);
    std::ofstream(root_ / "config.json") << node.dump();
  }
  ~VerifyTree() {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }
  VerifyTree(const VerifyTree&) = delete;
  VerifyTree& operator=(const VerifyTree&) = delete;

  [[nodiscard]] fs::path agent() const { return root_ / "bundle" / "oarbank-agent"; }
  [[nodiscard]] fs::path path(const std::string& name) const { return root_ / name; }

  fs::path write_policy(const std::string& name, const std::string& extra) const {
    fs::path file = root_ / (name + ".json");
    std::ofstream(file) << fmt::format(R"({{"bundle": "{}", "work": "{}"{}}})",
                                       (root_ / "bundle").string(), (root_ / "work").string(),
                                       extra);
    return file;
  }

  // Runs `oarbank-agent sandbox-exec --config C POLICY -- AGENT sandbox-probe ARGS...`.
  ProbeResult probe(const fs::path& policy, const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {
        self_,           "sandbox-exec", "--config",       (root_ / "config.json").string(),
        policy.string(), "--",           agent().string(), "sandbox-probe"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    cargv.reserve(argv.size() + 1);
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) != 0) throw setup_error("pipe2");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipefd[1], 1);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, self_.c_str(), &actions, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipefd[1]);
    ProbeResult result;
    if (rc != 0) {
      ::close(pipefd[0]);
      return result;
    }
    char buffer[256];
    for (ssize_t got; (got = ::read(pipefd[0], buffer, sizeof buffer)) > 0;) {
      result.output.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(pipefd[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    while (!result.output.empty() && result.output.back() == '\n') result.output.pop_back();
    return result;
  }

 private:
  fs::path root_;
  std::string self_;
};

// One row's probes: each (args, expected line). The first is the control that must work.
struct Check {
  std::vector<std::string> args;
  std::string expected;
};

RowVerification run_checks(CapabilityRow row, const VerifyTree& tree, const fs::path& policy,
                           const std::vector<Check>& checks) {
  RowVerification v{row, true, ""};
  std::string tried;
  for (const auto& check : checks) {
    ProbeResult result = tree.probe(policy, check.args);
    std::string what;
    for (const auto& a : check.args) what += (what.empty() ? "" : " ") + a;
    if (result.exit_code != 0 || result.output != check.expected) {
      v.passed = false;
      v.detail = fmt::format("probe `{}` expected \"{}\", got \"{}\" (exit {})", what,
                             check.expected, result.output, result.exit_code);
      return v;
    }
    tried += (tried.empty() ? "" : "; ") + what + ": " + result.output;
  }
  v.detail = tried;
  return v;
}

std::optional<CapabilityStatus> status_of(const Report& report, CapabilityRow row) {
  for (const auto& verdict : report.rows) {
    if (verdict.row == row) return verdict.status;
  }
  return std::nullopt;
}

bool enforced(const Report& report, CapabilityRow row) {
  for (const auto& verdict : report.rows) {
    if (verdict.row == row) return row_is_met(verdict.status);  // port only runs too
  }
  return false;
}

}  // namespace

std::vector<RowVerification> verify_report(const Report& report, const NodeConfig& config) {
  std::vector<RowVerification> out;
  Listener proxy = listen_tcp();
  Listener other = listen_tcp();
  VerifyTree tree(config, proxy.port);
  const std::string secret = tree.path("outside/secret").string();
  const std::string agent = tree.agent().string();

  if (enforced(report, CapabilityRow::Filesystem)) {
    auto policy = tree.write_policy("filesystem", R"(, "ipc_isolation": "best-effort")");
    out.push_back(run_checks(CapabilityRow::Filesystem, tree, policy,
                             {{{"read", agent}, "ok"},
                              {{"read", secret}, "errno EACCES"},
                              {{"write", tree.path("bundle/planted").string()}, "errno EACCES"},
                              {{"socket", "inet"}, "errno EAFNOSUPPORT"},
                              {{"listen"}, "errno EPERM"}}));
  }
  // The launcher runs a module only where the filesystem row is enforced: elsewhere there is
  // no sandbox to probe the filter from.
  if (enforced(report, CapabilityRow::SetidFiles) && enforced(report, CapabilityRow::Filesystem)) {
    auto policy = tree.write_policy("setid", R"(, "ipc_isolation": "best-effort")");
    const std::string plain = tree.path("work/plain").string();
    out.push_back(
        run_checks(CapabilityRow::SetidFiles, tree, policy,
                   {{{"create", plain, "0644"}, "ok"},
                    {{"chmod", plain, "0755"}, "ok"},
                    {{"chmod", plain, "4755"}, "errno EPERM"},
                    {{"chmod", plain, "2755"}, "errno EPERM"},
                    {{"create", tree.path("work/setuid").string(), "4755"}, "errno EPERM"},
                    {{"mkdir", tree.path("work/setgid").string(), "2775"}, "errno EPERM"}}));
  }
  if (enforced(report, CapabilityRow::EgressAllowlist)) {
    auto policy = tree.write_policy(
        "egress", R"(, "net": "egress-allowlist", "ipc_isolation": "best-effort")");
    std::vector<Check> checks = {{{"connect", std::to_string(proxy.port)}, "ok"},
                                 {{"connect", std::to_string(other.port)}, "errno EACCES"},
                                 {{"socket", "udp"}, "errno EPROTONOSUPPORT"}};
    // Enforced (not port only): the module's own network namespace. A listener on the
    // node's 127.0.0.2 at the proxy's very port, which Landlock's rule alone lets through,
    // must not be reachable from inside it.
    std::optional<Listener> elsewhere;
    if (status_of(report, CapabilityRow::EgressAllowlist) == CapabilityStatus::Enforced) {
      try {
        elsewhere = listen_tcp(0x7f000002, proxy.port);
        checks.push_back(
            {{"connect", std::to_string(proxy.port), "127.0.0.2"}, "errno ECONNREFUSED"});
      } catch (const Error&) {
        // 127.0.0.2 cannot be bound here: the other probes still run.
      }
    }
    out.push_back(run_checks(CapabilityRow::EgressAllowlist, tree, policy, checks));
  }
  if (enforced(report, CapabilityRow::Ipc)) {
    std::string name;
    UniqueFd abstract = listen_abstract(name);
    pid_t sleeper = start_sleeper(config);
    auto policy = tree.write_policy("ipc", R"(, "broker": true, "ipc_isolation": "required")");
    out.push_back(run_checks(CapabilityRow::Ipc, tree, policy,
                             {{{"socket", "unix"}, "ok"},
                              {{"kill", std::to_string(sleeper)}, "errno EPERM"},
                              {{"connect-abstract", name}, "errno EPERM"}}));
    if (sleeper > 0) {
      ::kill(sleeper, SIGKILL);
      ::waitpid(sleeper, nullptr, 0);
    }
  }
  return out;
}

}  // namespace oarbank
