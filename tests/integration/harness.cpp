#include "harness.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <linux/landlock.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace oarbank::it {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("harness: " + what + ": " + std::strerror(errno));
}

void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Reads what is there; false once the other end is closed.
bool drain(int fd, std::string& into) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN;
  }
}

}  // namespace

// --- RunResult ------------------------------------------------------------------------------

std::string RunResult::out_line() const {
  std::string s = out;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

std::size_t RunResult::err_line_count() const {
  std::size_t lines = static_cast<std::size_t>(std::count(err.begin(), err.end(), '\n'));
  if (!err.empty() && err.back() != '\n') ++lines;
  return lines;
}

std::string RunResult::describe() const {
  std::string s;
  if (timed_out) {
    s = "[timed out]";
  } else if (signal != 0) {
    s = "[signal " + std::to_string(signal) + " " +
        (sigabbrev_np(signal) ? sigabbrev_np(signal) : "?") + "]";
  } else {
    s = "[exit " + std::to_string(exit_code) + "]";
  }
  // Long output (a whole --explain plan) is cut: the start says what it was.
  auto cut = [](const std::string& text) {
    constexpr std::size_t kMax = 600;
    return text.size() <= kMax ? nlohmann::json(text).dump()
                               : nlohmann::json(text.substr(0, kMax)).dump() + "... (" +
                                     std::to_string(text.size()) + " bytes)";
  };
  return s + " stdout=" + cut(out) + " stderr=" + cut(err);
}

void exec_in_child(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  ::execve(args[0], args.data(), envp.data());
  ::_exit(127);
}

// --- run_command ------------------------------------------------------------------------------

RunResult run_command(const std::vector<std::string>& argv, const RunOptions& options) {
  if (argv.empty()) throw std::invalid_argument("run_command: empty argv");
  int out_pipe[2];
  int err_pipe[2];
  check(::pipe2(out_pipe, O_CLOEXEC) == 0, "pipe2");
  check(::pipe2(err_pipe, O_CLOEXEC) == 0, "pipe2");

  // Everything the child needs is built before fork: no allocation after it.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : options.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const int in_fd = options.stdin_fd.value_or(-1);
  const bool change_user = options.user.has_value();
  const uid_t uid = change_user ? options.user->first : 0;
  const gid_t gid = change_user ? options.user->second : 0;

  pid_t pid = ::fork();
  check(pid >= 0, "fork");
  if (pid == 0) {
    ::signal(SIGPIPE, SIG_DFL);
    int stdin_fd = in_fd >= 0 ? in_fd : ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (stdin_fd < 0 || ::dup2(stdin_fd, 0) < 0 || ::dup2(out_pipe[1], 1) < 0 ||
        ::dup2(err_pipe[1], 2) < 0) {
      _exit(126);
    }
    if (options.controlling_terminal) {
      if (::setsid() < 0 || ::ioctl(0, TIOCSCTTY, 0) != 0) _exit(125);
    }
    if (change_user && !become_user(uid, gid)) _exit(124);
    ::execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  set_nonblocking(out_pipe[0]);
  set_nonblocking(err_pipe[0]);

  RunResult result;
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  bool out_open = true;
  bool err_open = true;
  while (out_open || err_open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd fds[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0},
                     {err_open ? err_pipe[0] : -1, POLLIN, 0}};
    int n = ::poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) fail("poll");
    if (out_open && fds[0].revents != 0) out_open = drain(out_pipe[0], result.out);
    if (err_open && fds[1].revents != 0) err_open = drain(err_pipe[0], result.err);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) fail("waitpid");
  }
  drain(out_pipe[0], result.out);
  drain(err_pipe[0], result.err);
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

// --- The machine ---------------------------------------------------------------------------------

bool running_as_root() { return ::geteuid() == 0; }

int kernel_landlock_abi() {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

bool kernel_landlock_disabled() {
  return ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION) < 0 &&
         errno == EOPNOTSUPP;
}

int effective_abi(int cap) {
  int abi = std::min(kernel_landlock_abi(), 7);
  return cap < 0 ? abi : std::min(abi, cap);
}

bool machine_has_gpu_nodes() {
  if (exists("/dev/dri") || exists("/dev/kfd")) return true;
  for (const auto& name : list_dir("/dev")) {
    if (name.starts_with("nvidia")) return true;
  }
  return false;
}

uid_t module_uid() { return running_as_root() ? 65534 : ::getuid(); }
gid_t module_gid() { return running_as_root() ? 65534 : ::getgid(); }

bool become_user(uid_t uid, gid_t gid) {
  return ::setgroups(0, nullptr) == 0 && ::setresgid(gid, gid, gid) == 0 &&
         ::setresuid(uid, uid, uid) == 0;
}

// --- Files
// ----------------------------------------------------------------------------------------

void write_file(const std::string& path, const std::string& content, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  check(fd >= 0, "open " + path);
  check(::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()),
        "write " + path);
  ::fchmod(fd, mode);
  ::close(fd);
}

std::string read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  check(fd >= 0, "open " + path);
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// A file that may vanish while it is read (a /proc entry of a process that is ending): gone
// between the look and the open is "not there", not a harness failure.
std::string read_if_there(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    check(errno == ENOENT || errno == ESRCH, "open " + path);
    return "";
  }
  std::string out;
  char buf[65536];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  const int read_errno = errno;
  ::close(fd);
  if (n < 0 && read_errno != ESRCH) {
    errno = read_errno;
    check(false, "read " + path);
  }
  return n < 0 ? "" : out;
}

std::string read_proc_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
    out.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  return n < 0 ? "" : out;
}

bool process_exists(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

bool process_running(pid_t pid) {
  if (!process_exists(pid)) return false;
  const std::string stat = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t name_end = stat.rfind(')');  // the state follows "(comm) "
  return name_end == std::string::npos || name_end + 2 >= stat.size() || stat[name_end + 2] != 'Z';
}

void copy_file(const std::string& from, const std::string& to, mode_t mode) {
  write_file(to, read_file(from), mode);
}

void remove_tree(const std::string& path) {
  if (!exists(path)) return;
  // First make every directory ours to empty (a module may leave 0500 ones), then remove
  // depth-first. Errors are ignored: the leftovers check reports what remains.
  ::nftw(
      path.c_str(),
      [](const char* p, const struct stat* st, int type, FTW*) {
        if (type == FTW_D || type == FTW_DNR) ::chmod(p, (st->st_mode & 07777) | S_IRWXU);
        return 0;
      },
      16, FTW_PHYS);
  ::nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int, FTW*) {
        ::remove(p);
        return 0;
      },
      16, FTW_DEPTH | FTW_PHYS);
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return names;
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

std::string test_leaves_parent() {
  std::string mount;
  std::ifstream mountinfo("/proc/self/mountinfo");
  for (std::string line; mount.empty() && std::getline(mountinfo, line);) {
    auto dash = line.find(" - cgroup2 ");
    if (dash == std::string::npos) continue;
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, dev, root;
    fields >> id >> parent >> dev >> root >> mount;
  }
  if (mount.empty()) return "";
  std::ifstream cgroup("/proc/self/cgroup");
  for (std::string line; std::getline(cgroup, line);) {
    if (line.rfind("0::", 0) != 0) continue;
    std::string relative = line.substr(3);
    if (relative.ends_with("/oarbank-supervisor")) relative.resize(relative.size() - 19);
    return mount + (relative == "/" ? "" : relative);
  }
  return "";
}

// --- SandboxTree
// ------------------------------------------------------------------------------------

SandboxTree::SandboxTree() {
  std::string templ = "/tmp/oarbank-it-" + std::to_string(::getpid()) + "-XXXXXX";
  check(::mkdtemp(templ.data()) != nullptr, "mkdtemp");
  root_ = templ;
  check(::chmod(root_.c_str(), 0755) == 0, "chmod " + root_);
  for (const char* dir : {"bundle", "runtime", "runtime/bin", "toolbox", "work", "temp", "data0",
                          "data1", "outside", "etc"}) {
    check(::mkdir(path(dir).c_str(), 0755) == 0, std::string("mkdir ") + dir);
  }
  copy_file(OARBANK_PAYLOAD_BINARY, probe(), 0755);
  write_file(path("bundle/bundle.txt"), "bundle\n", 0666);
  write_file(path("runtime/lib.txt"), "runtime\n", 0666);
  check(::link(probe().c_str(), path("runtime/bin/rt").c_str()) == 0, "link runtime/bin/rt");
  // A copy, not a link: Landlock attaches a rule on a file to its inode, so a tool that is a
  // hard link of another file would grant that file's every path.
  copy_file(probe(), path("toolbox/tool"), 0755);
  write_file(path("toolbox/other.txt"), "other\n", 0666);
  write_file(path("outside/secret.txt"), "secret\n", 0666);
  check(::link(probe().c_str(), path("outside/prog").c_str()) == 0, "link outside/prog");
  if (running_as_root()) {
    // Everything but etc/ belongs to the module user: file permissions would allow it all.
    for (const char* entry :
         {"bundle", "bundle/probe", "bundle/bundle.txt", "runtime", "runtime/lib.txt",
          "runtime/bin", "toolbox", "toolbox/tool", "toolbox/other.txt", "work", "temp", "data0",
          "data1", "outside", "outside/secret.txt"}) {
      check(::chown(path(entry).c_str(), module_uid(), module_gid()) == 0,
            std::string("chown ") + entry);
    }
    for (const char* dir : {"bundle", "runtime", "toolbox", "outside"})
      ::chmod(path(dir).c_str(), 0777);
  }
}

SandboxTree::~SandboxTree() { remove_tree(root_); }

nlohmann::json SandboxTree::base_policy() const {
  return nlohmann::json{
      {"version", 1},
      {"bundle", path("bundle")},
      {"runtime", {path("runtime")}},
      {"tools", {path("toolbox/tool")}},
      {"work", path("work")},
      {"temp", path("temp")},
      {"data", {path("data0"), path("data1")}},
      {"net", "none"},
      {"ipc_isolation", "best-effort"},
  };
}

std::string SandboxTree::write_json(const std::string& name, const nlohmann::json& document) const {
  return write_text(name, document.dump(2) + "\n");
}

std::string SandboxTree::write_text(const std::string& name, const std::string& text) const {
  std::string p = path("etc/" + name);
  write_file(p, text, 0644);
  return p;
}

// --- Listeners, sleeper, pty
// -----------------------------------------------------------------------

TcpListener::TcpListener() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  check(fd_ >= 0, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "bind 127.0.0.1:0");
  check(::listen(fd_, 16) == 0, "listen");
  socklen_t len = sizeof addr;
  check(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0, "getsockname");
  port_ = ntohs(addr.sin_port);
}

TcpListener::~TcpListener() { ::close(fd_); }

UnixListener::UnixListener(const std::string& address) {
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  check(fd_ >= 0, "socket(AF_UNIX)");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (address.size() >= sizeof addr.sun_path) throw std::invalid_argument("unix address too long");
  std::memcpy(addr.sun_path, address.data(), address.size());
  if (address[0] == '@') {
    addr.sun_path[0] = '\0';
  } else {
    path_ = address;
  }
  auto len = static_cast<socklen_t>(sizeof(sa_family_t) + address.size());
  check(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0, "bind " + address);
  if (!path_.empty()) ::chmod(path_.c_str(), 0777);  // connect needs write permission
  check(::listen(fd_, 16) == 0, "listen " + address);
}

UnixListener::~UnixListener() {
  ::close(fd_);
  if (!path_.empty()) ::unlink(path_.c_str());
}

Sleeper::Sleeper() {
  const uid_t uid = module_uid();
  const gid_t gid = module_gid();
  const pid_t parent = ::getpid();
  // Closed by the child's exec: the constructor returns only once /bin/sleep runs, so the
  // process is dumpable again (a uid change clears that until the exec) and its /proc files
  // are the module user's, as a test expects.
  int exec_pipe[2];
  check(::pipe2(exec_pipe, O_CLOEXEC) == 0, "pipe2");
  pid_ = ::fork();
  check(pid_ >= 0, "fork");
  if (pid_ == 0) {
    ::close(exec_pipe[0]);
    if (running_as_root() && !become_user(uid, gid)) _exit(1);
    // After the uid change, which would clear it; kept across the exec of /bin/sleep.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(0);
    const char* const args[] = {"sleep", "600", nullptr};
    const char* const env[] = {"PATH=/usr/bin:/bin", nullptr};
    ::execve("/bin/sleep", const_cast<char* const*>(args), const_cast<char* const*>(env));
    _exit(127);
  }
  ::close(exec_pipe[1]);
  char byte;
  while (::read(exec_pipe[0], &byte, 1) < 0 && errno == EINTR) {
  }
  ::close(exec_pipe[0]);
}

Sleeper::~Sleeper() {
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

Pty::Pty() {
  master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  check(master_ >= 0, "posix_openpt");
  check(::grantpt(master_) == 0 && ::unlockpt(master_) == 0, "grantpt/unlockpt");
  char name[128];
  check(::ptsname_r(master_, name, sizeof name) == 0, "ptsname_r");
  slave_ = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  check(slave_ >= 0, std::string("open ") + name);
}

Pty::~Pty() {
  ::close(slave_);
  ::close(master_);
}

std::string unique_name(const std::string& stem) {
  static std::atomic<int> counter{0};
  return "oarbank-it-" + stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

bool have_program(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return false;
  const std::string target = resolved;
  return ::access(target.c_str(), X_OK) == 0 && target.find("busybox") == std::string::npos;
}

}  // namespace oarbank::it
