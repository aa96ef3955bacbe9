// Integration-test harness: runs the real oarbank-agent (and the probe payload inside it) as
// child processes, and builds a throw-away sandbox tree under /tmp for each test.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace oarbank::it {

// What the probe payload prints for an operation that worked, and for one refused with an errno.
inline constexpr const char* kOk = "ok";
inline constexpr const char* kEperm = "errno EPERM";
inline constexpr const char* kEacces = "errno EACCES";
inline constexpr const char* kEnosys = "errno ENOSYS";
inline constexpr const char* kEafnosupport = "errno EAFNOSUPPORT";
inline constexpr const char* kEprotonosupport = "errno EPROTONOSUPPORT";
inline constexpr const char* kEopnotsupp = "errno EOPNOTSUPP";

#ifdef OARBANK_AGENT_BINARY
// The agent under test.
inline const std::string kAgent = OARBANK_AGENT_BINARY;
#endif

// A process with this pid exists (a zombie too), whoever owns it.
bool process_exists(pid_t pid);
// ... and has not ended: not a zombie. An orphan's zombie waits for the init that adopted it,
// which on this machine reaps a second or two late.
bool process_running(pid_t pid);

// Polls `predicate` every 5 ms until it holds or `timeout` passes; its last answer.
template <typename Predicate>
bool eventually(Predicate predicate, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return predicate();
}

// --- Running a command -------------------------------------------------------------------

struct RunOptions {
  // The complete environment of the command (no inheritance from the test process).
  std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin"};
  // Descriptor to give the command as fd 0 (dup2'ed); /dev/null when unset.
  std::optional<int> stdin_fd;
  // setsid() and make fd 0 the controlling terminal (stdin_fd must be a terminal).
  bool controlling_terminal = false;
  // Run as this uid and gid, with no supplementary groups (the test must be root).
  std::optional<std::pair<uid_t, gid_t>> user;
  std::chrono::milliseconds timeout{10000};
};

struct RunResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;      // the terminating signal, 0 when it exited
  bool timed_out = false;
  std::string out;
  std::string err;

  [[nodiscard]] bool exited(int code) const {
    return signal == 0 && !timed_out && exit_code == code;
  }
  // stdout without its trailing newline.
  [[nodiscard]] std::string out_line() const;
  // How many lines stderr holds (a final line without '\n' counts).
  [[nodiscard]] std::size_t err_line_count() const;
  // A one-line summary for assertion messages.
  [[nodiscard]] std::string describe() const;
};

// fork + execve(argv[0], argv, options.env), capturing stdout and stderr; the command is
// killed (SIGKILL) when it outlives options.timeout. Descriptors of the test process that are
// not close-on-exec are inherited, as they would be from any supervisor.
RunResult run_command(const std::vector<std::string>& argv, const RunOptions& options = {});

// --- The machine --------------------------------------------------------------------------

bool running_as_root();
// The Landlock ABI of the running kernel (0 when Landlock is absent or disabled).
int kernel_landlock_abi();
// Whether Landlock is built into the kernel but disabled at boot (left out of lsm=).
bool kernel_landlock_disabled();
// The ABI the launcher uses under a node cap (cap < 0: uncapped). The launcher knows ABI 7.
int effective_abi(int cap);
// Whether this machine has a GPU device node the launcher would grant (/dev/dri, /dev/kfd,
// /dev/nvidia*).
bool machine_has_gpu_nodes();
// The uid and gid the module runs as (65534 when the tests run as root, else our own).
uid_t module_uid();
gid_t module_gid();
// In a forked child, before its exec: become uid:gid in every slot, with no supplementary
// groups. Only system calls (safe after fork in a threaded process). False on a failure.
bool become_user(uid_t uid, gid_t gid);

// In a test's forked child: execve(argv[0], argv, env), else _exit(127). It allocates, so only
// for children of a test that forks while it has one thread.
[[noreturn]] void exec_in_child(const std::vector<std::string>& argv,
                                const std::vector<std::string>& env);

// --- Files --------------------------------------------------------------------------------

void write_file(const std::string& path, const std::string& content, mode_t mode = 0644);
std::string read_file(const std::string& path);
bool exists(const std::string& path);
// The file's text, or "" while it does not exist yet.
std::string read_if_there(const std::string& path);
// A file of /proc read whole, or "" once its process is gone: a process that exits between the
// open and the read answers ESRCH, which std::filebuf throws as an exception.
std::string read_proc_file(const std::string& path);
// A program of its own at `path` (after links), not a busybox applet: the kernel matrix's
// guests have busybox only, so tests that need python3, util-linux or coreutils run where they are.
bool have_program(const std::string& path);
void copy_file(const std::string& from, const std::string& to, mode_t mode);
// Removes a tree, symbolic links not followed.
void remove_tree(const std::string& path);
// Every entry of a directory (names only), sorted.
std::vector<std::string> list_dir(const std::string& path);

// --- cgroup v2 ------------------------------------------------------------------------------

// Where sandbox-run started by this process makes its leaves: this process's cgroup (less a
// trailing oarbank-supervisor) on the cgroup2 mount; "" without cgroup2.
std::string test_leaves_parent();

// --- A per-test sandbox tree --------------------------------------------------------------

// /tmp/oarbank-it-<pid>-XXXXXX, traversable by everyone, removed by the destructor:
//   bundle/probe            a copy of the probe payload (the module)
//   bundle/bundle.txt       a bundle file
//   runtime/lib.txt         runtime: a directory
//   runtime/bin/rt          an executable (hard link of bundle/probe)
//   toolbox/tool            tools: this file only (a copy of bundle/probe)
//   toolbox/other.txt       beside the tool, not granted
//   work/ temp/ data0/ data1/    writable by the module user
//   outside/secret.txt      granted to nobody
//   outside/prog            granted to nobody (a hard link of bundle/probe)
//   etc/                    policy and configuration files written by the test
// When run as root everything (but etc/) belongs to the module user, so every refusal the
// tests see inside the granted tree comes from Landlock, not from file permissions.
class SandboxTree {
 public:
  SandboxTree();
  ~SandboxTree();
  SandboxTree(const SandboxTree&) = delete;
  SandboxTree& operator=(const SandboxTree&) = delete;

  [[nodiscard]] const std::string& root() const { return root_; }
  [[nodiscard]] std::string path(const std::string& relative) const {
    return root_ + "/" + relative;
  }
  [[nodiscard]] std::string probe() const { return path("bundle/probe"); }

  // A policy granting the tree (bundle, runtime, tools, work, temp, data0, data1), net none,
  // ipc_isolation best-effort (so that it runs below Landlock ABI 6 too).
  [[nodiscard]] nlohmann::json base_policy() const;
  // Writes JSON (or raw text) under etc/ and returns its path.
  std::string write_json(const std::string& name, const nlohmann::json& document) const;
  std::string write_text(const std::string& name, const std::string& text) const;

 private:
  std::string root_;
};

// --- Sockets and processes the test holds outside the sandbox ------------------------------

// A TCP listener on 127.0.0.1 (an ephemeral port), closed by the destructor.
class TcpListener {
 public:
  TcpListener();
  ~TcpListener();
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;
  [[nodiscard]] int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A listening unix stream socket: abstract ("@name") or a path (made connectable by all).
class UnixListener {
 public:
  explicit UnixListener(const std::string& address);
  ~UnixListener();
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;

 private:
  int fd_ = -1;
  std::string path_;  // empty for an abstract socket
};

// A process that sleeps until killed (/bin/sleep, so dumpable like any process the user
// starts), running as the module user (when root), outside any sandbox. The destructor kills
// and reaps it.
class Sleeper {
 public:
  Sleeper();
  ~Sleeper();
  Sleeper(const Sleeper&) = delete;
  Sleeper& operator=(const Sleeper&) = delete;
  [[nodiscard]] pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// A pseudo-terminal pair (posix_openpt); both ends closed by the destructor.
class Pty {
 public:
  Pty();
  ~Pty();
  Pty(const Pty&) = delete;
  Pty& operator=(const Pty&) = delete;
  [[nodiscard]] int master() const { return master_; }
  [[nodiscard]] int slave() const { return slave_; }

 private:
  int master_ = -1;
  int slave_ = -1;
};

// A unique name for abstract sockets and the like.
std::string unique_name(const std::string& stem);

}  // namespace oarbank::it
