#include "plan/denial_advice.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>

#include <cerrno>
#include <nlohmann/json.hpp>

namespace oarbank {
namespace {

bool holds(const seccomp::ArgCheck& check, const std::array<std::uint64_t, 6>& args) {
  if (check.arg >= args.size()) return false;
  const std::uint64_t value = args[check.arg];
  switch (check.op) {
    case seccomp::Compare::Equal:
      return value == check.value;
    case seccomp::Compare::Greater:
      return value > check.value;
    case seccomp::Compare::MaskedEqual:
      return (value & check.mask) == check.value;
  }
  return false;
}

std::string ioctl_name(std::uint64_t command) {
  const std::uint32_t low = static_cast<std::uint32_t>(command);
  static const std::pair<std::uint32_t, const char*> kNames[] = {
      {TIOCSTI, "TIOCSTI"},        {TIOCLINUX, "TIOCLINUX"}, {TIOCSPGRP, "TIOCSPGRP"},
      {TIOCSETD, "TIOCSETD"},      {TIOCCONS, "TIOCCONS"},   {TIOCNOTTY, "TIOCNOTTY"},
      {TIOCSCTTY, "TIOCSCTTY"},    {TIOCEXCL, "TIOCEXCL"},   {TIOCNXCL, "TIOCNXCL"},
      {TIOCVHANGUP, "TIOCVHANGUP"}};
  for (const auto& [value, name] : kNames) {
    if (value == low) return name;
  }
  if ((low & 0xffffff00U) == 0x4B00) return fmt::format("KD* {:#x}", low);
  if ((low & 0xffffff00U) == 0x5600) return fmt::format("VT_* {:#x}", low);
  return fmt::format("{:#x}", low);
}

std::string ptrace_request_name(std::uint64_t request) {
  switch (request) {
    case PTRACE_TRACEME:
      return "PTRACE_TRACEME";
    case PTRACE_ATTACH:
      return "PTRACE_ATTACH";
    case PTRACE_SEIZE:
      return "PTRACE_SEIZE";
    case PTRACE_PEEKDATA:
      return "PTRACE_PEEKDATA";
    case PTRACE_POKEDATA:
      return "PTRACE_POKEDATA";
    // strace's first call on its child (session 18's real-programs review), and gdb's.
    case PTRACE_SETOPTIONS:
      return "PTRACE_SETOPTIONS";
    case PTRACE_INTERRUPT:
      return "PTRACE_INTERRUPT";
    case PTRACE_CONT:
      return "PTRACE_CONT";
    case PTRACE_GETREGS:
      return "PTRACE_GETREGS";
    case PTRACE_PEEKUSER:
      return "PTRACE_PEEKUSER";
    default:
      return fmt::format("request {}", request);
  }
}

// The argument that says what the call was aimed at.
std::string describe_object(const SeccompCall& call) {
  const auto& a = call.args;
  const std::string& s = call.syscall;
  if (s == "socket" || s == "socketpair") {
    std::string text = socket_family_name(a[0]) + " " + socket_type_name(a[1]);
    if (a[2] != 0) text += fmt::format(" protocol {}", a[2]);
    return text;
  }
  if (s == "ioctl") return ioctl_name(a[1]);
  if (s == "ptrace") return fmt::format("{} pid {}", ptrace_request_name(a[0]), a[1]);
  if (s == "clone") return fmt::format("flags {:#x}", a[0]);
  if (s == "personality") return fmt::format("{:#x}", static_cast<std::uint32_t>(a[0]));
  if (s == "memfd_create") return fmt::format("flags {:#x}", static_cast<std::uint32_t>(a[1]));
  if (s == "seccomp") return fmt::format("operation {} flags {:#x}", a[0], a[1]);
  if (s == "sendto" || s == "sendmsg" || s == "sendmmsg") return "MSG_FASTOPEN";
  if (s == "prlimit64" || s == "sched_setaffinity" || s == "sched_setscheduler" ||
      s == "sched_setparam" || s == "sched_setattr" || s == "kcmp" || s == "pidfd_getfd" ||
      s == "process_vm_readv" || s == "process_vm_writev") {
    return fmt::format("pid {}", static_cast<std::int64_t>(a[0]));
  }
  if (s == "setpriority" || s == "ioprio_set") return fmt::format("which {} who {}", a[0], a[1]);
  // The mode setters: the path (when read) and the mode the rule looked at.
  int mode_arg = -1;
  if (s == "chmod" || s == "fchmod" || s == "mkdir" || s == "mknod" || s == "creat") mode_arg = 1;
  if (s == "fchmodat" || s == "fchmodat2" || s == "mkdirat" || s == "mknodat" || s == "open") {
    mode_arg = 2;
  }
  if (s == "openat") mode_arg = 3;
  // Access mode 3 (session 18): the flags are what was refused, not the mode.
  const int flags_arg = s == "open" ? 1 : s == "openat" ? 2 : -1;
  if (flags_arg >= 0 && (a[static_cast<std::size_t>(flags_arg)] & 3) == 3) {
    return call.path + (call.path.empty() ? "" : " ") + "access mode 3";
  }
  std::string text = call.path;
  if (mode_arg >= 0) {
    text += fmt::format("{}mode {:#o}", text.empty() ? "" : " ",
                        static_cast<std::uint32_t>(a[static_cast<std::size_t>(mode_arg)]) & 07777);
  }
  return text;
}

}  // namespace

std::string socket_family_name(std::uint64_t family) {
  static const std::pair<std::uint64_t, const char*> kNames[] = {
      {AF_UNIX, "AF_UNIX"},     {AF_INET, "AF_INET"},
      {AF_INET6, "AF_INET6"},   {AF_NETLINK, "AF_NETLINK"},
      {AF_PACKET, "AF_PACKET"}, {AF_KEY, "AF_KEY"},
      {AF_VSOCK, "AF_VSOCK"},   {AF_ALG, "AF_ALG"},
      {AF_TIPC, "AF_TIPC"},     {AF_BLUETOOTH, "AF_BLUETOOTH"},
      {AF_XDP, "AF_XDP"},       {AF_CAN, "AF_CAN"},
      {AF_RDS, "AF_RDS"},       {AF_APPLETALK, "AF_APPLETALK"},
      {AF_X25, "AF_X25"},       {AF_AX25, "AF_AX25"}};
  for (const auto& [value, name] : kNames) {
    if (value == family) return name;
  }
  return fmt::format("family {}", family);
}

std::string socket_type_name(std::uint64_t type) {
  switch (type & 0xf) {
    case SOCK_STREAM:
      return "SOCK_STREAM";
    case SOCK_DGRAM:
      return "SOCK_DGRAM";
    case SOCK_RAW:
      return "SOCK_RAW";
    case SOCK_RDM:
      return "SOCK_RDM";
    case SOCK_SEQPACKET:
      return "SOCK_SEQPACKET";
    case SOCK_PACKET:
      return "SOCK_PACKET";
    default:
      return fmt::format("type {}", type & 0xf);
  }
}

std::optional<std::string> seccomp_refusal_reason(const seccomp::FilterVariant& variant,
                                                  const SeccompCall& call, int err) {
  for (const auto& rule : seccomp::rules_for(variant)) {
    if (rule.syscall != call.syscall || rule.errno_value != err) continue;
    bool all = true;
    for (const auto& check : rule.args) all = all && holds(check, call.args);
    if (all) return rule.why;
  }
  for (const auto& list : seccomp::allowlists32()) {
    if (list.syscall != call.syscall || list.errno_value != err || list.arg >= call.args.size()) {
      continue;
    }
    const auto low = static_cast<std::uint32_t>(call.args[list.arg]);
    bool allowed = false;
    for (std::uint32_t value : list.allowed) allowed = allowed || value == low;
    if (!allowed) return list.why;
  }
  return std::nullopt;
}

int seccomp_path_argument(std::string_view s) {
  if (s == "chmod" || s == "mkdir" || s == "mknod" || s == "creat" || s == "open" ||
      s == "chroot" || s == "setxattr" || s == "lsetxattr" || s == "removexattr" ||
      s == "lremovexattr") {
    return 0;
  }
  if (s == "fchmodat" || s == "fchmodat2" || s == "mkdirat" || s == "mknodat" || s == "openat") {
    return 1;
  }
  if (s == "mount") return 1;  // the target
  return -1;
}

Denial seccomp_denial(const seccomp::FilterVariant& variant, const SeccompCall& call, int err) {
  Denial d;
  d.mechanism = "seccomp";
  d.operation = call.syscall;
  d.object = describe_object(call);
  d.error = seccomp::errno_name(err);
  d.reason = seccomp_refusal_reason(variant, call, err)
                 .value_or("no rule of the filter names it (answered " + d.error + ")");
  // What a policy can grant: the socket families (net and broker) and the broker's datagram
  // pairs. Everything else the filter refuses, it refuses to every module.
  const auto& a = call.args;
  if (call.syscall == "socket" && err == EAFNOSUPPORT) {
    if (a[0] == AF_UNIX && !variant.unix_sockets) {
      d.allowed_by =
          "add \"broker\": true (unix sockets are the broker grant: connecting to the node's "
          "broker; a module never listens)";
      // glibc's user and host lookups try nscd's socket first and go on without it: a
      // program that worked needs no grant for this refusal, and --learn proposes it only
      // after a trial that failed (session 15: curl and ls were proposed the broker).
      d.grant = {{"key", "broker"}, {"set", true}, {"only_if_the_run_failed", true}};
      d.reason =
          "unix sockets: not granted (user and host lookups try nscd's socket and carry on "
          "without it)";
    } else if ((a[0] == AF_INET || a[0] == AF_INET6) && !variant.inet &&
               (a[1] & 0xf) != SOCK_STREAM) {
      // egress-allowlist allows stream sockets only: no policy grants UDP (DNS) or raw ones.
      d.reason =
          "IPv4 and IPv6 sockets: net is none, and no policy allows datagram or raw ones (a "
          "module has no DNS: it names hosts to the agent's proxy, which resolves them)";
    } else if ((a[0] == AF_INET || a[0] == AF_INET6) && !variant.inet) {
      d.allowed_by =
          "set \"net\": \"egress-allowlist\" and list the destinations in \"egress\" (the module "
          "reaches them through the agent's proxy; for connecting out only: a module never "
          "listens, under any policy)";
      d.reason = "IPv4 and IPv6 sockets: net is none";
      d.grant = {{"key", "net"}, {"set", "egress-allowlist"}};
    } else {
      d.reason =
          "only unix (with the broker grant), IPv4 and IPv6 (under egress-allowlist) "
          "sockets are ever allowed";
      // Issue 12: and netlink route, in the module's own network namespace.
      if (variant.own_namespaces) {
        d.reason += ", and netlink route and sock_diag in the module's own namespace";
      } else if (a[0] == AF_NETLINK) {
        // Session 21's attack review: the line did not say what would allow it.
        d.reason +=
            ", and netlink route and sock_diag (ip, ss) only in a network namespace of the "
            "module's own: sandbox-run as root on a node whose configuration has module_world "
            "true gives it one (in the node's, they would list the node's)";
      }
    }
  } else if (call.syscall == "socketpair" && err == EPROTONOSUPPORT && a[0] == AF_UNIX &&
             !variant.unix_sockets) {
    d.allowed_by = "add \"broker\": true (unix datagram pairs come with the broker grant)";
    d.grant = {{"key", "broker"}, {"set", true}};
    d.reason = "unix datagram pairs: not granted";
  }
  return d;
}

std::optional<Denial> proxy_denial(std::string_view json_line) {
  const auto line = nlohmann::json::parse(json_line, nullptr, false);
  if (!line.is_object()) return std::nullopt;
  auto text = [&](const char* key) {
    const auto it = line.find(key);
    return it != line.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (text("event") != "decision" || text("verdict") != "refuse") return std::nullopt;
  Denial d;
  d.mechanism = "proxy";
  d.operation = text("method").empty() ? "request" : text("method");
  d.object = text("destination");
  const auto status = line.find("status");
  d.error = status != line.end() && status->is_number_integer() ? std::to_string(status->get<int>())
                                                                : "refused";
  d.reason = text("reason");
  // The proxy's count of refusals like this one that it wrote as this one line.
  if (const auto repeated = line.find("repeated"); repeated != line.end() &&
                                                   repeated->is_number_unsigned() &&
                                                   repeated->get<std::uint64_t>() > 0) {
    d.count = repeated->get<std::uint64_t>();
  }
  // Only a destination missing from the allowlist is the policy's to grant; a private range
  // is the node's (proxy_allow_private_ranges), the rest (DNS, bad requests) no policy's.
  if (d.reason.ends_with("is not on the module's egress allowlist") && !d.object.empty()) {
    d.allowed_by = "add \"" + d.object + "\" to \"egress\"";
    d.grant = {{"key", "egress"}, {"add", d.object}};
  }
  return d;
}

}  // namespace oarbank
