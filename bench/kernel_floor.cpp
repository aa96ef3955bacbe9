// oarbank-kernel-floor: the kernel's part of a sandbox-exec launch, with none of the launcher's
// own code (docs/performance.md, "Session 19: the kernel's share of the launch"). A static
// binary that makes, in the same order, the system calls `oarbank-agent sandbox-exec` makes for
// the launch benchmark's default policy ({"bundle": "/usr/bin", "ipc_isolation":
// "best-effort"}) as root: the policy file read, the probe, the 17 path opens of the Landlock
// rules (the merged /usr's five links each an ELOOP and a readlink first, as the plan's
// RESOLVE_NO_SYMLINKS walk does), the ruleset and its 16 rules, identity (groups, the 41
// bounding-set drops, setres*, capset, the scheduler reads), no_new_privs, restrict_self, the
// same precompiled seccomp program (variant 0), and the exec of its arguments. No parsing, no
// plan, no allocation beyond glibc's start-up: what is left between `sandbox-exec` and this side
// in the same run is the launcher's own work; what is between this side and the floor is the
// kernel's work the policy asks for.
//   oarbank-kernel-floor POLICY PROGRAM [ARGS...]    (as root, as the benchmark runs)
//   OARBANK_KERNEL_FLOOR_WITHOUT=seccomp|capbset|landlock   the same without that step (the
//                                       opens stay; landlock: no ruleset, rules or restrict_self)
//   OARBANK_KERNEL_FLOOR_RUN=CGROUP2_DIR   the kernel's part of `sandbox-run` instead (session 20,
//                                       docs/performance.md): what its supervisor asks of the
//                                       kernel beyond sandbox-exec's steps, in its order (strace of
//                                       `sandbox-run --config` with no world and no audit reader):
//                                       the run record (O_TMPFILE, flock, pwrite, linkat) in
//                                       $OARBANK_STATE_DIR, the cgroup place read, a leaf made
//                                       under CGROUP2_DIR, the subreaper, signalfd, timerfd,
//                                       socketpair, clone3 into the leaf (CLONE_VFORK), the child
//                                       recording itself and sending its seccomp listener, the
//                                       parent's verification (/proc/PID/status), the wait, the
//                                       leaf's events read and rmdir, the children swept, the
//                                       record unlinked; the child makes sandbox-exec's steps.
//                                       With OARBANK_KERNEL_FLOOR_WITHOUT=record (no state
//                                       directory, sweep or record) or =leaf (no leaf: the child
//                                       stays in the caller's cgroup) the run model without it.
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "apply/seccomp_programs.hpp"
#include "sys/landlock_abi.hpp"

extern char** environ;

namespace {

// PR_GET_MEMORY_MERGE (Linux 6.4), which Debian 12's headers lack; the launcher asks it.
constexpr int kPrGetMemoryMerge = 68;

[[noreturn]] void fail(const char* what) {
  std::perror(what);
  std::_Exit(70);
}

int open_beneath(const char* path, unsigned long long flags) {
  open_how how{};
  how.flags = flags | O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS;
  return static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how));
}

const char* g_without = nullptr;
bool without(const char* step) { return g_without != nullptr && std::strcmp(g_without, step) == 0; }

void send_listener(int socket, int listener) {
  char text[] = "listener\n";
  iovec iov{text, sizeof text - 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))]{};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &listener, sizeof listener);
  if (::sendmsg(socket, &msg, 0) < 0) fail("sendmsg");
  ::close(listener);
}

// One small file read whole, as the supervisor reads /proc and cgroup files.
void read_small(const char* path) {
  char buffer[4096];
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  off_t at = 0;
  for (ssize_t got; (got = ::pread(fd, buffer, sizeof buffer, at)) > 0;) at += got;
  ::close(fd);
}

// The run record, as supervise/run_state.cpp writes it (JSON of about 300 bytes).
constexpr char kRecord[] =
    "{\"cgroup\":\"/sys/fs/cgroup/unified/oarbank-run-0000000000000000\",\"id\":\"run-00000000"
    "00000000\",\"module_pid\":0,\"phase\":\"starting\",\"policy\":\"/tmp/policy.json\","
    "\"start_time\":0,\"supervisor_pid\":0,\"supervisor_start_time\":0}";

[[noreturn]] void finish(char** program_argv, int ruleset, int bundle, int supervisor);

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fputs("usage: oarbank-kernel-floor POLICY PROGRAM [ARGS...]\n", stderr);
    return 64;
  }
  g_without = std::getenv("OARBANK_KERNEL_FLOOR_WITHOUT");
  const char* const run_cgroup = std::getenv("OARBANK_KERNEL_FLOOR_RUN");
  for (int fd = 0; fd < 3; ++fd) ::fcntl(fd, F_GETFD);
  struct stat st {};
  ::stat("/etc/oarbank/agent.json", &st);
  char buffer[65536];
  const int policy = ::open(argv[1], O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (policy < 0) fail("open policy");
  ::fstat(policy, &st);
  // The policy file's walk (apply/policy_file.cpp: each component's owner and mode).
  const char* const walk[] = {"/", "/tmp", "/tmp", argv[1]};
  for (const char* p : walk) ::lstat(p, &st);
  ::fstat(policy, &st);
  while (::read(policy, buffer, sizeof buffer) > 0) {
  }
  ::close(policy);
  // The run model: the state directory, the cgroup place, the record, the leaf (sandbox-run
  // makes these before its probe).
  int state = -1;
  int record = -1;
  int leaf = -1;
  char leaf_path[512];
  char record_name[64];
  if (run_cgroup != nullptr) {
    const char* state_dir = std::getenv("OARBANK_STATE_DIR");
    if (state_dir == nullptr) fail("OARBANK_STATE_DIR");
    if (!without("record")) {
      ::mkdir(state_dir, 0755);
      state = ::open(state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (state < 0) fail("open state");
      ::fstat(state, &st);
      const int sweep = ::openat(state, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      while (::syscall(SYS_getdents64, sweep, buffer, sizeof buffer) > 0) {
      }
      ::close(sweep);
    }
    struct statfs fs {};
    ::statfs("/sys/fs/cgroup", &fs);
    ::statfs(run_cgroup, &fs);
    read_small("/proc/self/cgroup");
    ::access(run_cgroup, W_OK);
    char stat_path[64];
    std::snprintf(stat_path, sizeof stat_path, "/proc/%d/stat", ::getpid());
    read_small(stat_path);
    if (!without("record")) {
      record = ::openat(state, ".", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
      if (record < 0) fail("O_TMPFILE");
      ::flock(record, LOCK_EX);
      ::pwrite(record, kRecord, sizeof kRecord - 1, 0);
      ::ftruncate(record, sizeof kRecord - 1);
      char self[64];
      std::snprintf(self, sizeof self, "/proc/self/fd/%d", record);
      std::snprintf(record_name, sizeof record_name, "run-%d.json", ::getpid());
      if (::linkat(AT_FDCWD, self, state, record_name, AT_SYMLINK_FOLLOW) != 0) fail("linkat");
      ::pwrite(record, kRecord, sizeof kRecord - 1, 0);
      ::ftruncate(record, sizeof kRecord - 1);
    }
    std::snprintf(leaf_path, sizeof leaf_path, "%s/cgroup.subtree_control", run_cgroup);
    read_small(leaf_path);
    std::snprintf(leaf_path, sizeof leaf_path, "%s/cgroup.controllers", run_cgroup);
    read_small(leaf_path);
    std::snprintf(leaf_path, sizeof leaf_path, "%s/oarbank-kf-%d", run_cgroup, ::getpid());
    if (!without("leaf")) {
      if (::mkdir(leaf_path, 0755) != 0) fail("mkdir leaf");
      leaf = ::open(leaf_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (leaf < 0) fail("open leaf");
    }
  }
  utsname uts{};
  ::uname(&uts);
  oarbank::landlock::create_ruleset(nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  unsigned action = SECCOMP_RET_ERRNO;
  ::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action);
  action = SECCOMP_RET_KILL_PROCESS;
  ::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[2]{};
  ::syscall(SYS_capget, &header, caps);

  // The plan's opens: the base system's directories, the bundle, the devices.
  constexpr unsigned long long kDir = O_RDONLY | O_DIRECTORY;
  int dirs[16];
  int n = 0;
  char link[4096];
  for (const char* p : {"/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc", "/opt",
                        "/proc", "/sys/devices/system/cpu"}) {
    int fd = open_beneath(p, kDir);
    if (fd < 0) {
      const ssize_t len = ::readlink(p, link + 1, sizeof link - 2);
      if (len <= 0) fail("readlink");
      link[0] = '/';
      link[len + 1] = '\0';
      fd = open_beneath(link, kDir);
    }
    if (fd < 0) fail("openat2");
    dirs[n++] = fd;
  }
  const int bundle = open_beneath("/usr/bin", O_RDONLY);
  ::fstat(bundle, &st);
  int devices[5];
  int d = 0;
  for (const char* p : {"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/full"}) {
    devices[d] = open_beneath(p, O_RDONLY);
    ::fstat(devices[d++], &st);
  }

  namespace ll = oarbank::landlock;
  ll::RulesetAttr attr;
  attr.handled_access_fs = (1ULL << 16) - 1;  // every file right of ABI 5 to 7
  attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
  attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
  const int ruleset = without("landlock") ? -1 : ll::create_ruleset(&attr, sizeof attr, 0);
  if (ruleset < 0 && !without("landlock")) fail("landlock_create_ruleset");
  constexpr unsigned long long kReadExec =
      LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
  if (!without("landlock")) {
    ll::PathBeneathAttr rule{kReadExec, bundle};
    ll::add_rule(ruleset, ll::kRulePathBeneath, &rule, 0);
    for (int i = 0; i < n; ++i) {
      rule.parent_fd = dirs[i];
      ll::add_rule(ruleset, ll::kRulePathBeneath, &rule, 0);
    }
    rule.allowed_access = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE;
    for (int i = 0; i < d; ++i) {
      rule.parent_fd = devices[i];
      ll::add_rule(ruleset, ll::kRulePathBeneath, &rule, 0);
    }
  }

  if (run_cgroup == nullptr) finish(argv + 2, ruleset, bundle, -1);

  // The supervisor's set-up, the spawn into the leaf, and what it does after the module.
  for (int fd = 0; fd < 3; ++fd) ::fstat(fd, &st);
  for (int fd = 0; fd < 3; ++fd) ::ioctl(fd, TCGETS, buffer);
  read_small("/proc/self/oom_score_adj");
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  sigset_t stops;
  sigemptyset(&stops);
  for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGCHLD}) sigaddset(&stops, sig);
  ::sigprocmask(SIG_BLOCK, &stops, nullptr);
  const int signals = ::signalfd(-1, &stops, SFD_CLOEXEC | SFD_NONBLOCK);
  const int timer = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  int channel[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0) fail("socketpair");
  int pidfd = -1;
  clone_args args{};
  args.flags = CLONE_PIDFD | CLONE_VFORK | (leaf >= 0 ? CLONE_INTO_CGROUP : 0);
  args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<std::uint64_t>(leaf);
  const long child = ::syscall(SYS_clone3, &args, sizeof args);
  if (child < 0) fail("clone3");
  if (child == 0) {
    ::setsid();
    ::sigprocmask(SIG_SETMASK, &stops, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    read_small("/proc/self/stat");
    if (record >= 0) {
      ::pwrite(record, kRecord, sizeof kRecord - 1, 0);
      ::ftruncate(record, sizeof kRecord - 1);
    }
    ::prctl(kPrGetMemoryMerge, 0, 0, 0, 0);
    finish(argv + 2, ruleset, bundle, channel[1]);
  }
  ::close(channel[1]);
  char message[512];
  pollfd waits[3] = {{channel[0], POLLIN, 0}, {signals, POLLIN, 0}, {timer, POLLIN, 0}};
  for (;;) {
    ::poll(waits, 3, -1);
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))]{};
    iovec iov{message, sizeof message};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    if (::recvmsg(channel[0], &msg, MSG_CMSG_CLOEXEC) <= 0) break;
  }
  ::close(channel[0]);
  char status_path[64];
  std::snprintf(status_path, sizeof status_path, "/proc/%ld/status", child);
  read_small(status_path);
  pollfd exit_wait[2] = {{pidfd, POLLIN, 0}, {signals, POLLIN, 0}};
  ::poll(exit_wait, 2, -1);
  siginfo_t info{};
  ::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT);
  if (leaf >= 0) {
    char events[600];
    std::snprintf(events, sizeof events, "%s/cgroup.events", leaf_path);
    read_small(events);
    std::snprintf(events, sizeof events, "%s/memory.events", leaf_path);
    read_small(events);
    std::snprintf(events, sizeof events, "%s/pids.events", leaf_path);
    read_small(events);
    ::close(leaf);
    if (::rmdir(leaf_path) != 0) fail("rmdir leaf");
  }
  char children[64];
  std::snprintf(children, sizeof children, "/proc/self/task/%d/children", ::getpid());
  read_small(children);
  int status = 0;
  ::waitpid(static_cast<pid_t>(child), &status, 0);
  ::close(pidfd);
  ::close(timer);
  ::close(signals);
  if (record >= 0) {
    ::fstat(record, &st);
    ::fstatat(state, record_name, &st, AT_SYMLINK_NOFOLLOW);
    ::unlinkat(state, record_name, 0);
    ::close(record);
    ::close(state);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

namespace {

// sandbox-exec's steps from the descriptors on: identity, no_new_privs, Landlock, the filter,
// the exec. Under the run model the filter comes with a listener sent to the supervisor, and
// the real uid is set after the send, as the launcher does.
[[noreturn]] void finish(char** program_argv, int ruleset, int bundle, int supervisor) {
  namespace ll = oarbank::landlock;
  ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  // Identity, as root to the module user.
  if (::setgroups(0, nullptr) != 0) fail("setgroups");
  for (int cap = 0; !without("capbset") && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0; ++cap) {
  }
  if (::setresgid(65534, 65534, 65534) != 0 ||
      ::setresuid(supervisor >= 0 ? static_cast<uid_t>(-1) : 65534, 65534, 65534) != 0)
    fail("setres*id");
  uid_t r = 0, e = 0, s = 0;
  ::getresuid(&r, &e, &s);
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_data_struct none[2]{};
  ::syscall(SYS_capset, &header, none);
  ::sched_getscheduler(0);
  ::getpriority(PRIO_PROCESS, 0);
  ::syscall(SYS_ioprio_get, 1, 0);
  ::syscall(SYS_personality, 0xffffffffUL);
  rlimit zero{0, 0};
  ::prlimit(0, RLIMIT_RTPRIO, &zero, nullptr);
  ::prlimit(0, RLIMIT_NICE, &zero, nullptr);
  ::fchdir(bundle);

  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("no_new_privs");
  if (!without("landlock")) {
    if (ll::restrict_self(ruleset, 0) != 0) fail("landlock_restrict_self");
    ::close(ruleset);
  }
  const auto& program = oarbank::seccomp::kPrograms[0];
  sock_fprog fprog{static_cast<unsigned short>(program.length),
                   const_cast<sock_filter*>(program.instructions)};
  if (!without("seccomp")) {
    const long listener = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                    supervisor >= 0 ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0, &fprog);
    if (listener < 0) fail("seccomp");
    if (supervisor >= 0) send_listener(supervisor, static_cast<int>(listener));
  }
  if (supervisor >= 0) {
    if (::setresuid(65534, 65534, 65534) != 0) fail("setresuid");
    ::getresuid(&r, &e, &s);
    if (::write(supervisor, "exec\n", 5) != 5) fail("write");
  }
  ::execve(program_argv[0], program_argv, environ);
  fail("execve");
}

}  // namespace
