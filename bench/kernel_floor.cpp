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
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "apply/seccomp_programs.hpp"
#include "sys/landlock_abi.hpp"

extern char** environ;

namespace {

void fail(const char* what) {
  std::perror(what);
  std::_Exit(70);
}

int open_beneath(const char* path, unsigned long long flags) {
  open_how how{};
  how.flags = flags | O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS;
  return static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fputs("usage: oarbank-kernel-floor POLICY PROGRAM [ARGS...]\n", stderr);
    return 64;
  }
  const char* without_env = std::getenv("OARBANK_KERNEL_FLOOR_WITHOUT");
  const auto without = [without_env](const char* step) {
    return without_env != nullptr && std::strcmp(without_env, step) == 0;
  };
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
  ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);

  // Identity, as root to the module user.
  if (::setgroups(0, nullptr) != 0) fail("setgroups");
  for (int cap = 0; !without("capbset") && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0; ++cap) {
  }
  if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0)
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
  if (!without("seccomp") && ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0)
    fail("seccomp");
  ::execve(argv[2], argv + 2, environ);
  fail("execve");
}
