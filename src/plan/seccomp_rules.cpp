#include "plan/seccomp_rules.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/netlink.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <set>
#include <tuple>

#include "plan/mechanism.hpp"
#include "plan/mechanism_network.hpp"
#include "sys/landlock_abi.hpp"

namespace oarbank::seccomp {
namespace {

// The highest address family number the kernel defines (AF_MCTP is 45 in Linux 6.x).
// Families above it are refused by a single "greater than" rule.
constexpr std::uint64_t kHighestFamily = 45;
// The kernel's __O_TMPFILE bit (uapi asm-generic/fcntl.h). glibc's __O_TMPFILE already
// includes O_DIRECTORY, so it is written out here.
constexpr std::uint64_t kTmpfileBit = 020000000;
// memfd_create's MFD_NOEXEC_SEAL (uapi linux/memfd.h, Linux 6.3; Debian 12's headers predate it).
constexpr std::uint64_t kMfdNoexecSeal = 0x0008;

void add(std::vector<Rule>& rules, std::initializer_list<const char*> names, int err,
         const std::string& why) {
  for (const char* name : names) rules.push_back(Rule{name, -1, err, {}, why});
}

}  // namespace

// Refuses `syscall` unless argument `arg` is one of `allowed` (all values up to `highest`,
// then everything above it). libseccomp cannot compare one argument twice in a rule, so
// "not in a set" is written as one rule per refused value plus one "greater than" rule.
void refuse_unless_in(std::vector<Rule>& rules, const std::string& syscall, unsigned arg,
                      const std::set<std::uint64_t>& allowed, std::uint64_t highest, int err,
                      const std::vector<ArgCheck>& also, const std::string& why) {
  for (std::uint64_t value = 0; value <= highest; ++value) {
    if (allowed.count(value) != 0) continue;
    Rule rule{syscall, -1, err, also, why};
    rule.args.push_back({arg, Compare::Equal, value, 0});
    rules.push_back(std::move(rule));
  }
  Rule above{syscall, -1, err, also, why};
  above.args.push_back({arg, Compare::Greater, highest, 0});
  rules.push_back(std::move(above));
}

std::string FilterVariant::name() const {
  std::string out = inet ? "inet-streams" : "no-inet";
  if (unix_sockets) out += "+unix";
  if (own_namespaces) out += "+own-namespaces";
  if (own_user) out += "+own-user";
  if (own_group) out += "+own-group";
  return out;
}

FilterVariant variant_from_index(int index) {
  return FilterVariant{(index & 2) != 0, (index & 1) != 0, (index & 4) != 0, (index & 8) != 0,
                       (index & 16) != 0};
}

FilterVariant variant_for(const Policy& policy, const ModuleWorld& world) {
  return FilterVariant{inet_sockets_allowed(policy), policy.broker, world.own_namespaces,
                       world.own_user, world.own_group};
}

std::string errno_name(int err) {
  const char* name = strerrorname_np(err);
  return name != nullptr ? name : std::to_string(err);
}

std::string describe(const ArgCheck& check) {
  switch (check.op) {
    case Compare::Equal:
      return fmt::format("arg{} == {:#x}", check.arg, check.value);
    case Compare::Greater:
      return fmt::format("arg{} > {:#x}", check.arg, check.value);
    case Compare::MaskedEqual:
      return fmt::format("arg{} & {:#x} == {:#x}", check.arg, check.mask, check.value);
  }
  return "?";
}

std::string describe(const Allowlist32& list) {
  std::string values;
  for (std::uint32_t value : list.allowed) {
    values += fmt::format("{}{:#x}", values.empty() ? "" : ", ", value);
  }
  return fmt::format("arg{} & 0xffffffff not in {{{}}}", list.arg, values);
}

std::vector<Allowlist32> allowlists32() {
  // personality(2): READ_IMPLIES_EXEC and ADDR_NO_RANDOMIZE survive execve, so a module could
  // run a program with executable data or without address randomization. The kernel reads the
  // argument as 32 bits (0xffffffff00400000 sets ADDR_NO_RANDOMIZE), and 0xffffffff queries
  // without setting. Masked rules per flag bit would refuse the query too, whose bits are all
  // set, so this one is compiled by hand.
  return {Allowlist32{"personality",
                      135,
                      0,
                      {0xffffffffU, 0x0000 /* PER_LINUX */, 0x0008 /* PER_LINUX32 */},
                      EPERM,
                      "only querying (0xffffffff) and the plain personalities PER_LINUX and "
                      "PER_LINUX32: READ_IMPLIES_EXEC and ADDR_NO_RANDOMIZE survive execve"},
          // Attack reviews (session 14): a Landlock domain of the module's own, nested in the
          // sandbox's, only if it logs as the sandbox's does. Audit records a denial for the
          // youngest domain that refused it, and a domain logs after its process's exec only
          // with LOG_NEW_EXEC_ON: one made without it (then an exec), with LOG_SAME_EXEC_OFF,
          // or under one made with LOG_SUBDOMAINS_OFF (Linux 6.15) took the sandbox's own
          // refusals out of the run's denials while the module probed the node. Exactly that
          // flag, as 32 bits: a later kernel's flag is refused until it is judged. Below 6.15
          // the kernel refuses the flag (EINVAL), so a module nests no domain there. The
          // launcher's own call comes before the filter.
          Allowlist32{"landlock_restrict_self",
                      SYS_landlock_restrict_self,
                      1,
                      {LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON},
                      EPERM,
                      "a Landlock domain of the module's own must log its refusals as the "
                      "sandbox's does (flags LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON alone)"}};
}

std::vector<Rule> rules_for(const FilterVariant& variant) {
  std::vector<Rule> rules;

  // --- Sockets (the page: "no local IPC except the broker", "net = none", "never listening").
  std::set<std::uint64_t> families;
  if (variant.unix_sockets) families.insert(AF_UNIX);
  // In its own network namespace, NETLINK_ROUTE (below) lists only the module's own loopback
  // (getifaddrs, `ip addr`, Node's os.networkInterfaces()), and changes nothing: the module
  // has no CAP_NET_ADMIN over a namespace the node's user namespace owns.
  if (variant.own_namespaces) families.insert(AF_NETLINK);
  if (variant.inet) {
    families.insert(AF_INET);
    families.insert(AF_INET6);
  }
  if (families.empty()) {
    add(rules, {"socket"}, EAFNOSUPPORT,
        "net is none and there is no broker grant: no socket family is allowed");
  } else {
    const std::string why =
        "only the families the policy grants: unix with the broker grant, IPv4 and IPv6 under "
        "egress-allowlist";
    refuse_unless_in(rules, "socket", 0, families, kHighestFamily, EAFNOSUPPORT, {},
                     variant.own_namespaces
                         ? why + ", netlink (route and sock_diag only) in its own network namespace"
                         : why);
  }
  if (variant.own_namespaces) {
    // Other netlink protocols reach the node itself, whatever the namespace: audit, uevents
    // (NETLINK_KOBJECT_UEVENT), xfrm, netfilter. Route, and sock_diag (session 20's
    // real-programs review: `ss`), which lists the sockets of the asking socket's network
    // namespace alone (inet_diag and unix_diag look in sock_net) and destroys none without
    // CAP_NET_ADMIN; protocols up to MAX_LINKS (32) by value, then everything above.
    refuse_unless_in(rules, "socket", 2, {NETLINK_ROUTE, NETLINK_SOCK_DIAG}, 31, EPROTONOSUPPORT,
                     {{0, Compare::Equal, AF_NETLINK, 0}},
                     "netlink: NETLINK_ROUTE and NETLINK_SOCK_DIAG only, which see the module's "
                     "own network namespace (other protocols reach the node: audit, uevents, "
                     "xfrm, netfilter)");
  }
  // Each mechanism's rules on the socket calls (plan/mechanisms.cpp): the network's inet
  // rules (plan/mechanism_network.cpp).
  for (const Mechanism* mechanism : mechanisms()) {
    if (mechanism->socket_rules != nullptr) mechanism->socket_rules(variant, rules);
  }
  refuse_unless_in(rules, "socketpair", 0, {AF_UNIX}, kHighestFamily, EAFNOSUPPORT, {},
                   "socketpair stays for unix pairs (event loops need it); other families "
                   "(AF_TIPC) are refused");
  if (!variant.unix_sockets) {
    // An unbound unix datagram socket from socketpair can sendto() any pathname socket on the
    // host (the journal's, syslog's): only pairs that cannot address another socket stay.
    // SOCK_RAW counts: the kernel turns a unix SOCK_RAW into SOCK_DGRAM. The kernel reads
    // type & 0xf (SOCK_TYPE_MASK); SOCK_NONBLOCK and SOCK_CLOEXEC live above it.
    for (std::uint64_t type = 0; type <= kSockTypeMask; ++type) {
      if (type == SOCK_STREAM || type == SOCK_SEQPACKET) continue;
      rules.push_back(
          Rule{"socketpair",
               -1,
               EPROTONOSUPPORT,
               {{0, Compare::Equal, AF_UNIX, 0}, {1, Compare::MaskedEqual, type, kSockTypeMask}},
               "without the broker grant, unix pairs are streams or seqpackets only: a datagram "
               "socket could sendto() any pathname socket on the host"});
    }
  }
  add(rules, {"listen"}, EPERM, "never listening");

  // io_uring performs socket(), connect(), accept() and listen() on the module's behalf
  // without passing through this filter. ENOSYS: libraries fall back to plain syscalls.
  add(rules, {"io_uring_setup", "io_uring_enter", "io_uring_register"}, ENOSYS,
      "io_uring runs socket, connect and listen outside the seccomp filter");
  // Kernel AIO contexts come from one pool for the whole node (fs.aio-max-nr, 65536 events by
  // default), charged to no cgroup or uid: session 13's attack review took all of it from
  // inside, and the node's own io_setup then answered EAGAIN. ENOSYS, as a kernel without
  // CONFIG_AIO: what can do without it carries on (InnoDB, with a warning); what asks for it
  // by name fails (fio's libaio engine). glibc's POSIX aio never calls it.
  add(rules, {"io_setup"}, ENOSYS,
      "kernel AIO contexts come from one pool for the whole node (fs.aio-max-nr)");

  // --- Namespaces and mounts (the page: children).
  add(rules, {"unshare", "setns"}, EPERM,
      "a new or foreign namespace would change what the sandbox's rules refer to");
  for (std::uint64_t flag :
       {std::uint64_t{CLONE_NEWNS}, std::uint64_t{CLONE_NEWCGROUP}, std::uint64_t{CLONE_NEWUTS},
        std::uint64_t{CLONE_NEWIPC}, std::uint64_t{CLONE_NEWUSER}, std::uint64_t{CLONE_NEWPID},
        std::uint64_t{CLONE_NEWNET}}) {
    rules.push_back(Rule{"clone",
                         -1,
                         EPERM,
                         {{0, Compare::MaskedEqual, flag, flag}},
                         fmt::format("namespace flag {:#x} on clone", flag)});
  }
  // CLONE_PARENT makes the new process a child of the launcher's caller, outside the module's
  // own tree of processes.
  rules.push_back(Rule{"clone",
                       -1,
                       EPERM,
                       {{0, Compare::MaskedEqual, CLONE_PARENT, CLONE_PARENT}},
                       "CLONE_PARENT would hand the child to the launcher's caller"});
  add(rules, {"clone3"}, ENOSYS,
      "clone3's flags are in memory the filter cannot read; ENOSYS makes libc fall back to clone");
  add(rules,
      {"mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
       "move_mount", "open_tree", "mount_setattr"},
      EPERM, "mounting changes what paths the Landlock rules resolve to");
  rules.push_back(Rule{"open_tree_attr",
                       467,
                       EPERM,
                       {},
                       "mounting changes what paths the Landlock rules resolve to (Linux 6.15)"});

  // Issue 12: code the module wrote, run from a memfd (execveat(AT_EMPTY_PATH) or
  // /proc/self/fd/N). A memfd lives on the kernel's internal tmpfs, which Landlock lets
  // through (SB_NOUSER) and no noexec mount covers; one made with MFD_NOEXEC_SEAL (Linux 6.3)
  // has no execute bit and cannot get one. Without it: ENOSYS, and programs fall back to a
  // file (which the noexec writable directories cover) as on a kernel without memfd. Recorded
  // (session 19's real-programs review): Python's os.memfd_create raises instead, and the
  // author saw no line.
  rules.push_back(Rule{"memfd_create",
                       -1,
                       ENOSYS,
                       {{1, Compare::MaskedEqual, 0, kMfdNoexecSeal}},
                       "a memfd without MFD_NOEXEC_SEAL could be executed (Landlock does not "
                       "cover it): pass MFD_NOEXEC_SEAL (Linux 6.3), which no policy needs, or "
                       "use a file in temp",
                       false,
                       true});

  // --- Other processes and the kernel.
  add(rules, {"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp"}, EPERM,
      "reading or steering another process (ptrace and its relatives)");
  // A filter of the module's own with a listener (SECCOMP_FILTER_FLAG_NEW_LISTENER, 1 << 3)
  // would be asked before sandbox-run's on every call both answer with SECCOMP_RET_USER_NOTIF
  // (among equal actions the newest filter answers), and its listener could let the call run
  // (SECCOMP_USER_NOTIF_FLAG_CONTINUE): docs/denials.md. The flag is tested alone, whatever the
  // operation: no other operation takes it.
  rules.push_back(Rule{"seccomp",
                       -1,
                       EPERM,
                       {{1, Compare::MaskedEqual, 1U << 3, 1U << 3}},
                       "a seccomp listener of the module's own could answer in sandbox-run's "
                       "place and let a refused call run"});
  add(rules, {"perf_event_open"}, EPERM, "observes other processes and the kernel");
  add(rules, {"bpf"}, EPERM, "bpf programs run in the kernel");
  add(rules, {"add_key", "request_key", "keyctl"}, EPERM,
      "keyrings are shared with the caller's session");
  add(rules, {"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load"},
      EPERM, "kernel modules and kernels");
  add(rules, {"userfaultfd"}, EPERM, "widens kernel races; no module needs it");
  add(rules, {"open_by_handle_at", "name_to_handle_at"}, EPERM,
      "file handles open files without a path walk, so around Landlock");
  add(rules,
      {"reboot", "swapon", "swapoff", "acct", "iopl", "ioperm", "modify_ldt", "uselib", "quotactl",
       "syslog", "vhangup"},
      EPERM, "privileged machine operations");
  // Session 18's attack review: quotactl's descriptor form (Linux 5.14) went round the rule
  // above (Q_SYNC ran, quota information of any mount was read).
  rules.push_back(Rule{"quotactl_fd", 443, EPERM, {}, "privileged machine operations"});
  // memfd_secret (Linux 5.14): its pages leave the kernel's direct map, and many of them
  // fragment it for the whole node; no module needs it. ENOSYS, as a kernel built without it.
  rules.push_back(Rule{"memfd_secret",
                       447,
                       ENOSYS,
                       {},
                       "secret memory leaves the kernel's direct map (fragmenting it for the "
                       "node); ENOSYS, as a kernel without CONFIG_SECRETMEM"});

  // --- What Landlock does not govern on a file it would not let the module open (session 18's
  // attack reviews). Extended attributes by path: getxattr read user.* values, ACLs and labels
  // of any file the module user may reach by path (a token in root's 0644 file outside every
  // grant), and setxattr and removexattr changed them on any file its uid may write (a 0666
  // file, its own from an earlier run), with no Landlock check. EOPNOTSUPP, as a file system
  // without xattrs: ls -l (which asks every file it lists), cp -a and Python's shutil carry
  // on; reads are quiet (not recorded: ls), changes recorded. Reading through a descriptor
  // stays (the open was Landlock's to allow; see the access mode 3 rule below). The *at forms
  // (Linux 6.13) by number.
  const std::string xattr_read_why =
      "extended attributes read by path: Landlock does not check them, so files outside the "
      "policy's grants would be read; open the file (a read grant) and use fgetxattr";
  for (const auto& [name, number] : {std::pair<const char*, int>{"getxattr", -1},
                                     {"lgetxattr", -1},
                                     {"listxattr", -1},
                                     {"llistxattr", -1},
                                     {"getxattrat", 464},
                                     {"listxattrat", 465}}) {
    rules.push_back(Rule{name, number, EOPNOTSUPP, {}, xattr_read_why, true});
  }
  // Changes, by path or descriptor: the kernel checks the file's owner and mode, not how the
  // descriptor was opened, so a read-only descriptor (a read grant) changed the attributes of a
  // file the module's uid may write (session 18's review of the diff). No module's file has
  // attributes it can change; reads through a descriptor stay.
  for (const auto& [name, number] : {std::pair<const char*, int>{"setxattr", -1},
                                     {"lsetxattr", -1},
                                     {"fsetxattr", -1},
                                     {"removexattr", -1},
                                     {"lremovexattr", -1},
                                     {"fremovexattr", -1},
                                     {"setxattrat", 463},
                                     {"removexattrat", 466}}) {
    rules.push_back(Rule{name,
                         number,
                         EOPNOTSUPP,
                         {},
                         "changing extended attributes: Landlock does not check it, so files "
                         "outside the policy's write grants would be changed; a module's files "
                         "carry none it can set (tar --xattrs, setfattr, setfacl fail so)"});
  }
  // open with access mode 3 (flags & O_ACCMODE == 3, "ioctl only"): the kernel asks read and
  // write permission of the file's mode but gives the descriptor neither FMODE_READ nor
  // FMODE_WRITE, and Landlock, which judges by those, checks nothing; fgetxattr on it read a
  // file outside every grant (session 18's review). No program needs it for a file.
  for (const auto& [name, flags_arg] : {std::pair<const char*, unsigned>{"open", 1},
                                        std::pair<const char*, unsigned>{"openat", 2}}) {
    rules.push_back(Rule{name,
                         -1,
                         EPERM,
                         {{flags_arg, Compare::MaskedEqual, 3, 3}},
                         "access mode 3 (neither read nor write) escapes Landlock's checks"});
  }
  // The page cache as a channel: posix_fadvise(DONTNEED) evicted a node file's pages and
  // preadv2(RWF_NOWAIT) then said whether anyone (another module, the node) had read it since,
  // one bit a file a round, with no Landlock check on either. RWF_NOWAIT (8, in preadv2's
  // flags, argument 5) answers EOPNOTSUPP, as a file that does not support it (callers read
  // without it); DONTNEED (4) is advice the kernel may ignore: answered 0, nothing evicted.
  // Both quiet. Timing a plain read, and the page-fault path's fault-around read through
  // /proc/self/pagemap, still tell a cached page (docs/sandbox-run.md).
  rules.push_back(Rule{"preadv2",
                       -1,
                       EOPNOTSUPP,
                       {{5, Compare::MaskedEqual, 8, 8}},
                       "RWF_NOWAIT tells whether a page of a node file is cached (whether "
                       "another module or the node read it)",
                       true});
  rules.push_back(Rule{"fadvise64",
                       -1,
                       0,
                       {{3, Compare::MaskedEqual, 4, 0xffffffffULL}},
                       "POSIX_FADV_DONTNEED would evict node files' pages for everyone (and "
                       "reset a page-cache channel): accepted and ignored",
                       true});
  // Same-page merging (KSM; session 19's attack review): with the node's KSM on
  // (/sys/kernel/mm/ksm/run, VM hosts, systemd's MemoryKSM=), a module that marks pages of
  // guessed content mergeable learns from /proc/self/ksm_merging_pages, or a copy-on-write
  // fault's time, whether another module or a node process holds a page of that content, and
  // two modules signal each other through it. MADV_MERGEABLE (12, madvise's int advice) and
  // PR_SET_MEMORY_MERGE (67, Linux 6.4, which needs no capability) answer EINVAL, as a kernel
  // without CONFIG_KSM does. madvise and prctl then run the program on every call.
  // process_madvise on the caller's own pidfd takes any advice since Linux 6.13 (session 19's
  // diff review): the same advice, its argument 3.
  constexpr const char* kMerging =
      "same-page merging (KSM) tells whether another module or the node holds a page of given "
      "content";
  for (const auto& [syscall, arg, value] :
       {std::tuple{"madvise", 2U, 12ULL}, std::tuple{"process_madvise", 3U, 12ULL},
        std::tuple{"prctl", 0U, 67ULL}}) {
    rules.push_back(
        Rule{syscall, -1, EINVAL, {{arg, Compare::MaskedEqual, value, 0xffffffffULL}}, kMerging});
  }
  // Project ids: an owner may move its files to another project (FS_IOC_FSSETXATTR, and
  // file_setattr of Linux 6.17), out of a project quota the node set on the writable roots
  // (docs/sandbox-run.md). FS_IOC_FSSETXATTR is _IOW('X', 32, struct fsxattr), 0x401c5820.
  rules.push_back(Rule{"ioctl",
                       -1,
                       EPERM,
                       {{1, Compare::MaskedEqual, 0x401c5820, 0xffffffffULL}},
                       "FS_IOC_FSSETXATTR sets a file's project id (out of a project quota)"});
  rules.push_back(Rule{"file_setattr",
                       469,
                       EPERM,
                       {},
                       "file_setattr sets a file's project id (out of a project quota)"});

  // --- Other processes of the same uid. Every module runs as the node's module user, and the
  // kernel lets a process change these for any process of its own uid; Landlock's signal
  // scope does not cover them. prlimit64 on another pid can set RLIMIT_CPU and so kill it, the
  // others starve it. A module may still change its own (pid 0, which libc passes).
  // With a uid of its own (variant.own_user), the kernel's same-user checks (prlimit64:
  // same real, effective and saved uid; sched_* and setpriority/ioprio_set by pid: same
  // effective uid) reach the module's own processes and threads alone, so by pid they stay
  // allowed (`renice -p $$`, pthread_setaffinity_np, resource.prlimit(pid, ...)).
  if (!variant.own_user) {
    for (const char* name : {"prlimit64", "sched_setaffinity", "sched_setscheduler",
                             "sched_setparam", "sched_setattr"}) {
      rules.push_back(Rule{name,
                           -1,
                           EPERM,
                           {{0, Compare::Greater, 0, 0}},
                           "acts on another process of the module user (only pid 0, itself)"});
    }
  }
  // setpriority(which, who, prio) and ioprio_set(which, who, prio): PRIO_PROCESS (0) and
  // IOPRIO_WHO_PROCESS (1) only, with who 0 only unless the uid is the module's own.
  rules.push_back(Rule{"setpriority",
                       -1,
                       EPERM,
                       {{0, Compare::Greater, 0, 0}},
                       "a process group or a whole user (every module) at once"});
  if (!variant.own_user) {
    rules.push_back(Rule{"setpriority",
                         -1,
                         EPERM,
                         {{1, Compare::Greater, 0, 0}},
                         "acts on another process of the module user (only who 0, itself)"});
  }
  rules.push_back(Rule{"ioprio_set",
                       -1,
                       EPERM,
                       {{0, Compare::Greater, 1, 0}},
                       "a process group or a whole user (every module) at once"});
  rules.push_back(
      Rule{"ioprio_set", -1, EPERM, {{0, Compare::Equal, 0, 0}}, "not an ioprio_set target"});
  // Attack review (session 15): the best-effort class at any level needs no capability, so a
  // module its operator put in the idle class (IOSchedulingClass=idle, ionice -c 3) took its
  // I/O priority back (`ionice -c 2 -n 0 -p $$`). Only the idle class is the module's to
  // choose, as a higher nice and SCHED_IDLE are; none (0: back to what nice gives) and
  // best-effort are refused, and real time needs CAP_SYS_ADMIN anyway. The class is bits 13 to
  // 15 of the value (IOPRIO_PRIO_CLASS).
  for (std::uint64_t io_class : {0x0000ULL, 0x2000ULL, 0x4000ULL}) {
    rules.push_back(Rule{"ioprio_set",
                         -1,
                         EPERM,
                         {{2, Compare::MaskedEqual, io_class, 0xE000}},
                         "raises the I/O priority the operator gave it: only the idle class "
                         "(ionice -c 3) is the module's to choose"});
  }
  if (!variant.own_user) {
    rules.push_back(Rule{"ioprio_set",
                         -1,
                         EPERM,
                         {{1, Compare::Greater, 0, 0}},
                         "acts on another process of the module user (only who 0, itself)"});
  }
  // inotify and fanotify report the names of files created, opened and read in any directory
  // the module user may read, which Landlock does not govern (no Landlock ABI up to 7 checks
  // inotify_add_watch): under a uid of its own too, /tmp, /usr/bin, /home and another module's
  // root-owned 0755 input directories are readable by every uid (session 11's attack review
  // watched all four from inside; issue 12 had allowed inotify under a uid of its own, with
  // the kernel's read check as the only bound). fanotify needs CAP_SYS_ADMIN anyway.
  //
  // Under +own-user a module makes its own inotify instances (charged to its own uid's limits),
  // and every inotify_add_watch is refused EPERM, which sandbox-run's notifying program hands
  // to the supervisor: it resolves the path as the module would and adds the watch only where
  // the module's own uid owns what it leads to (supervise/inotify_watch.hpp). Without the
  // supervisor's listener (the errno program) every watch stays refused.
  if (!variant.own_user) {
    add(rules, {"inotify_init", "inotify_init1"}, ENOSYS,
        "watches report activity in directories Landlock would not let the module list; ENOSYS "
        "makes file watchers fall back to polling (Node: fs.watchFile, not fs.watch)");
  }
  // Refused wherever the supervisor does not add it (an instance handed in by the caller
  // would otherwise watch anything the uid may read).
  add(rules, {"inotify_add_watch"}, EPERM,
      variant.own_user ? "a watch is the supervisor's to add: only on what the module's own uid "
                         "owns (its work, data and temp, and what it made)"
                       : "watches report activity in directories Landlock would not let the "
                         "module list");
  add(rules, {"fanotify_init"}, EPERM, "as inotify, for whole mounts");
  // The fcntl commands refused in every variant, compared on their low 32 bits, as the kernel
  // reads the command; every other fcntl stays allowed. dnotify, inotify's predecessor (Linux
  // 2.4): fcntl(dirfd, F_NOTIFY) on any directory the module may open signals it when files
  // there are created, read or run (session 13's attack review: another module's input, /etc,
  // /usr/bin). A lease (session 18's attack review) on a file of its own (its output in work)
  // held every opener, root's collecting the output too, in open(2) for fs.lease-break-time
  // (45 s by default), again on each open.
  for (const auto& [command, why] :
       {std::pair<std::uint64_t, const char*>{
            F_NOTIFY,
            "directory notifications (dnotify) report activity in directories the module does "
            "not own, as inotify's watches would"},
        std::pair<std::uint64_t, const char*>{
            F_SETLEASE,
            "a file lease holds whoever opens the file (the node collecting the module's "
            "output) in open(2) for fs.lease-break-time"}}) {
    rules.push_back(
        Rule{"fcntl", -1, EPERM, {{1, Compare::MaskedEqual, command, 0xffffffffULL}}, why});
  }
  // Leaving the process group (and session) escapes a container that is a process group only,
  // and a new session may read an inherited terminal without job control. With a cgroup leaf
  // as the container (torn down by cgroup.kill, whatever the groups) and no terminal but the
  // module's own (variant.own_group), they are allowed: GNU timeout's setpgid(0, 0), Python's
  // start_new_session, bash's job control.
  if (!variant.own_group) {
    add(rules, {"setsid", "setpgid"}, EPERM,
        "leaving the process group escapes teardown by group, and job control on the terminal");
  }

  // --- Local IPC outside the broker (the page: "no local IPC except the broker"). In an IPC
  // namespace of its own (variant.own_namespaces) every such object is the module's alone and
  // is gone when its last process ends.
  if (!variant.own_namespaces) {
    add(rules,
        {"msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semctl",
         "shmget", "shmat", "shmdt", "shmctl"},
        EPERM, "System V IPC objects are shared by every process of the module user");
    add(rules,
        {"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"},
        EPERM, "POSIX message queues are shared by every process of the module user");
  }

  // --- A terminal it inherited: pushing input into it runs commands as the caller.
  // The kernel reads ioctl's command as 32 bits, so the upper half is masked off.
  // Every rule compares the command on its low 32 bits (mask 0xffffffff: the upper half is
  // ignored, so 0xffffffff00005422 is refused as TIOCNOTTY is).
  const std::pair<unsigned long, const char*> kTerminalIoctls[] = {
      {TIOCSTI, "TIOCSTI would inject input into an inherited terminal"},
      {TIOCLINUX, "TIOCLINUX can paste into a virtual console"},
      {TIOCSPGRP,
       "TIOCSPGRP: a background module would make itself the terminal's foreground "
       "and read the operator's keystrokes"},
      {TIOCSETD, "TIOCSETD changes the terminal's line discipline"},
      {TIOCCONS, "TIOCCONS redirects the console"},
      {TIOCNOTTY,
       "TIOCNOTTY: without a controlling terminal, job control no longer stops a background "
       "module that reads the operator's terminal"},
      {TIOCSCTTY, "TIOCSCTTY takes a terminal as the controlling one"},
      {TIOCEXCL, "TIOCEXCL locks the operator out of opening their own terminal again"},
      {TIOCNXCL, "TIOCNXCL lifts another program's exclusive lock on the terminal"},
      {TIOCVHANGUP, "TIOCVHANGUP hangs up the terminal under every process using it"},
  };
  for (const auto& [command, why] : kTerminalIoctls) {
    // With no terminal but its own (variant.own_group), a session leader of the module's may
    // take its own pty as its controlling terminal (`script`, `expect`: login_tty). The kernel
    // refuses stealing another session's terminal without CAP_SYS_ADMIN.
    if (variant.own_group && command == TIOCSCTTY) continue;
    // And may choose the foreground group of that terminal (bash's job control, `fg`;
    // tcsetpgrp). The kernel takes TIOCSPGRP only on the caller's own controlling terminal, and
    // a group of the terminal's session: under own_group the only terminals the module holds
    // are ptys of its private devpts (its 0-2 on a terminal are its own pty, and no terminal
    // is handed in with --keep-fd), so the keystrokes it may read are those meant for it.
    // (Started with no terminal on 0-2 but a controlling one, the module leads a session of its
    // own with no controlling terminal (session 15), so /dev/tty, which Landlock grants under
    // sandbox-run alone (session 16), opens none (ENXIO); the node's ptys are granted to no
    // module, and a policy may name nothing in /dev.)
    if (variant.own_group && command == TIOCSPGRP) continue;
    rules.push_back(
        Rule{"ioctl", -1, EPERM, {{1, Compare::MaskedEqual, command, 0xffffffffULL}}, why});
  }
  // The console's own families: KD* (0x4Bxx: keyboard mode, fonts, KDSIGACCEPT, KDSETMODE) and
  // VT_* (0x56xx: switching and locking virtual terminals). Old-style numbers with no
  // direction or size bits, so one masked rule each covers the family and nothing else
  // (V4L2's _IOWR('V', ...) commands have those bits set and do not match).
  rules.push_back(Rule{"ioctl",
                       -1,
                       EPERM,
                       {{1, Compare::MaskedEqual, 0x4B00, 0xffffff00ULL}},
                       "KD* console ioctls (0x4Bxx): keyboard, fonts and display mode of a "
                       "virtual console"});
  rules.push_back(Rule{"ioctl",
                       -1,
                       EPERM,
                       {{1, Compare::MaskedEqual, 0x5600, 0xffffff00ULL}},
                       "VT_* console ioctls (0x56xx): switching, locking and resizing virtual "
                       "terminals"});

  // --- Setuid and setgid files (as systemd's RestrictSUIDSGID=). A module that left a setuid
  // or setgid program in a directory others can reach would hand its user to every local user,
  // outside any sandbox. The mode bits are compared alone (S_ISUID 04000, S_ISGID 02000), so
  // whatever the kernel keeps of the mode argument (umode_t, 16 bits) the test is the same.
  // EPERM, as systemd answers.
  const std::pair<std::uint64_t, const char*> kSetIdBits[] = {{S_ISUID, "setuid"},
                                                              {S_ISGID, "setgid"}};
  // The mode argument's position in each call that sets a mode.
  const std::pair<const char*, unsigned> kModeSetters[] = {
      {"chmod", 1},   {"fchmod", 1}, {"fchmodat", 2}, {"mkdir", 1},
      {"mkdirat", 2}, {"mknod", 1},  {"mknodat", 2},  {"creat", 1},
  };
  for (const auto& [bit, bit_name] : kSetIdBits) {
    for (const auto& [name, mode_arg] : kModeSetters) {
      rules.push_back(Rule{name,
                           -1,
                           EPERM,
                           {{mode_arg, Compare::MaskedEqual, bit, bit}},
                           fmt::format("no {} files or directories (RestrictSUIDSGID)", bit_name)});
    }
    // fchmodat2 (Linux 6.6) is newer than Debian 12's libseccomp: by number.
    rules.push_back(Rule{"fchmodat2",
                         452,
                         EPERM,
                         {{2, Compare::MaskedEqual, bit, bit}},
                         fmt::format("no {} files or directories (RestrictSUIDSGID)", bit_name)});
    // open and openat read the mode only when they create: O_CREAT, or O_TMPFILE (which is
    // __O_TMPFILE | O_DIRECTORY: the __O_TMPFILE bit is what says "create"). libseccomp cannot
    // compare one argument twice in a rule, so one rule per (flag bit, mode bit) pair.
    for (std::uint64_t create : {std::uint64_t{O_CREAT}, kTmpfileBit}) {
      for (const auto& [name, flags_arg, mode_arg] :
           {std::tuple<const char*, unsigned, unsigned>{"open", 1, 2},
            std::tuple<const char*, unsigned, unsigned>{"openat", 2, 3}}) {
        rules.push_back(Rule{name,
                             -1,
                             EPERM,
                             {{flags_arg, Compare::MaskedEqual, create, create},
                              {mode_arg, Compare::MaskedEqual, bit, bit}},
                             fmt::format("no {} files ({} with a {} mode)", bit_name,
                                         create == O_CREAT ? "O_CREAT" : "O_TMPFILE", bit_name)});
      }
    }
  }
  // openat2's mode is in a struct the filter cannot read; ENOSYS makes a caller that tries it
  // fall back to openat, whose mode the filter can read (glibc never calls openat2).
  add(rules, {"openat2"}, ENOSYS,
      "openat2's mode is in memory the filter cannot read; ENOSYS makes callers fall back to "
      "openat");
  return rules;
}

}  // namespace oarbank::seccomp
