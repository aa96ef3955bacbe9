#include "plan/landlock_denial.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "plan/protected_paths.hpp"

namespace oarbank {
namespace {

constexpr std::size_t kMaxOpenEvents = 256;

bool all_hex(std::string_view text) {
  return !text.empty() && text.size() % 2 == 0 && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
  });
}

std::string from_hex(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i + 1 < text.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(text.substr(i, 2)), nullptr, 16));
  }
  return out;
}

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return path;
  return slash == 0 ? "/" : path.substr(0, slash);
}

// `blockers` is audit's comma-separated list of the rights that refused the access.
bool has_blocker(std::string_view blockers, std::string_view right) {
  while (!blockers.empty()) {
    const auto comma = blockers.find(',');
    if (blockers.substr(0, comma) == right) return true;
    if (comma == std::string_view::npos) break;
    blockers.remove_prefix(comma + 1);
  }
  return false;
}

bool under(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.starts_with(dir) &&
                         (dir.ends_with('/') || path[dir.size()] == '/'));
}

// Why a refused path is no grant to propose (attack review: --learn proposes what a hostile
// module's refusals name, so the module chooses these paths): "/" and every top-level
// directory (a writable /tmp, /home or /var is every user's, not one module's data), and
// whatever is, contains or lies inside the base system or the kernel's and the node's own
// trees (/proc/PID/..., /dev/shm, /run: the run state directory lives there). Empty: grantable.
// The system's trees are named before the top-level rule, so that /dev/tty says /dev is never
// a module's rather than "name one below it" (the parser refuses every /dev path); /tmp and
// /var/tmp name what a module has instead: its "temp", which is its TMPDIR.
std::string not_grantable(const std::string& dir, const LandlockAdviceContext& context) {
  const std::string& temp = context.temp;
  const std::string path = normalize_path(dir);
  // Session 20's real-programs review: the policy change that gives it a /tmp of its own.
  const std::string own_tmp =
      path == "/tmp" && !context.tmp_kept_by.empty()
          ? "; or move " + context.tmp_kept_by +
                " out of /tmp: with nothing of its policy at or below /tmp, sandbox-run gives "
                "the module a /tmp of its own"
          : "";
  if (path == "/") return "the root directory is never a module's";
  static const char* const kSystem[] = {"/usr", "/lib",  "/lib32", "/lib64", "/bin",  "/sbin",
                                        "/etc", "/proc", "/sys",   "/dev",   "/boot", "/run"};
  for (const char* system : kSystem) {
    if (paths_overlap(path, system)) {
      // Session 18's review: a JVM writing its own /proc/PID/coredump_filter read "the node's
      // own /proc"; the kernel's trees are no one's to grant, the module's own entries too.
      if (std::string_view(system) == "/proc" || std::string_view(system) == "/sys") {
        return std::string("the kernel's ") + system +
               " (the module's own processes' entries too) is never a module's to add";
      }
      return std::string("the node's own ") + system + " is never a module's to add";
    }
  }
  if ((path == "/tmp" || path == "/var/tmp") && !temp.empty()) {
    // Session 16's review: "set it" where it was set already. TMPDIR names it; this program
    // did not follow it (Java reads java.io.tmpdir, never TMPDIR).
    return path + " is every user's and never proposed; the policy's \"temp\" (" + temp +
           ") is the module's TMPDIR, which this program does not follow: point it there (Java: "
           "-Djava.io.tmpdir=" +
           temp + ")" + own_tmp;
  }
  if (path == "/tmp" || path == "/var/tmp") {
    return path +
           " is every user's and never proposed; a module's temporary files go in the "
           "policy's \"temp\" (the module's TMPDIR): set it" +
           own_tmp;
  }
  if (path.find('/', 1) == std::string::npos) {
    return "a whole top-level directory (" + path + ") is never proposed; name one below it";
  }
  return "";
}

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// /proc/PID/fd or /proc/self/fd.
bool is_process_fd_directory(std::string_view path) {
  constexpr std::string_view kProc = "/proc/";
  constexpr std::string_view kFd = "/fd";
  if (!path.starts_with(kProc) || !path.ends_with(kFd) || path.size() <= kProc.size() + kFd.size())
    return false;
  const auto pid = path.substr(kProc.size(), path.size() - kProc.size() - kFd.size());
  return pid == "self" || all_digits(pid);
}

// The name an O_TMPFILE file has in an audit record: "DIR/#INODE (deleted)".
bool unnamed_temporary_file(std::string_view path) {
  constexpr std::string_view kDeleted = " (deleted)";
  const auto slash = path.rfind("/#");
  if (slash == std::string_view::npos || !path.ends_with(kDeleted)) return false;
  return all_digits(path.substr(slash + 2, path.size() - kDeleted.size() - slash - 2));
}

// The grant for `dir` when it may be proposed; otherwise no grant, and why in the reason.
void grant_or_refuse(Denial& d, const std::string& dir, std::string allowed_by,
                     nlohmann::json grant, const LandlockAdviceContext& context) {
  if (const std::string why = not_grantable(dir, context); !why.empty()) {
    d.reason += " (" + why + ")";
    return;
  }
  d.allowed_by = std::move(allowed_by);
  d.grant = std::move(grant);
}

}  // namespace

std::string AuditRecord::field(const std::string& key) const {
  auto it = fields.find(key);
  return it == fields.end() ? std::string() : it->second;
}

std::optional<AuditRecord> parse_audit_record(int type, std::string_view text) {
  AuditRecord record;
  record.type = type;
  if (!text.starts_with("audit(")) return std::nullopt;
  const auto close = text.find("): ");
  if (close == std::string_view::npos) return std::nullopt;
  record.serial = std::string(text.substr(6, close - 6));
  std::string_view rest = text.substr(close + 3);
  while (!rest.empty()) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    const auto equals = rest.find('=');
    if (equals == std::string_view::npos) break;
    std::string key(rest.substr(0, equals));
    rest.remove_prefix(equals + 1);
    std::string value;
    if (!rest.empty() && rest.front() == '"') {
      const auto end = rest.find('"', 1);
      if (end == std::string_view::npos) return std::nullopt;
      value = std::string(rest.substr(1, end - 1));
      rest.remove_prefix(end + 1);
    } else {
      const auto end = rest.find(' ');
      value = std::string(rest.substr(0, end));
      rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
      if ((key == "path" || key == "exe" || key == "comm") && all_hex(value)) {
        value = from_hex(value);
      }
    }
    record.fields[key] = value;
  }
  return record;
}

std::string canonical_endpoint(const std::string& address, const std::string& port) {
  in_addr in4{};
  in6_addr in6{};
  char text[INET6_ADDRSTRLEN];
  if (::inet_pton(AF_INET, address.c_str(), &in4) == 1 &&
      ::inet_ntop(AF_INET, &in4, text, sizeof text) != nullptr) {
    return std::string(text) + ":" + port;
  }
  if (::inet_pton(AF_INET6, address.c_str(), &in6) != 1) return "";
  // An IPv4-mapped address (::ffff:a.b.c.d, a dual-stack socket's connect) is that IPv4 one.
  if (IN6_IS_ADDR_V4MAPPED(&in6) &&
      ::inet_ntop(AF_INET, in6.s6_addr + 12, text, sizeof text) != nullptr) {
    return std::string(text) + ":" + port;
  }
  if (::inet_ntop(AF_INET6, &in6, text, sizeof text) != nullptr) {
    return "[" + std::string(text) + "]:" + port;
  }
  return "";
}

Denial landlock_denial(const AuditRecord& access, const AuditRecord* syscall,
                       const LandlockAdviceContext& context) {
  Denial d;
  const std::string blockers = access.field("blockers");
  d.operation = blockers;
  if (blockers.starts_with("fs.")) {
    d.mechanism = "landlock-fs";
  } else if (blockers.starts_with("net.")) {
    d.mechanism = "landlock-net";
  } else {
    d.mechanism = "landlock-scope";
  }
  d.error = "EACCES";
  if (syscall != nullptr) {
    d.pid = std::atoll(syscall->field("pid").c_str());
    d.executable = syscall->field("exe");
    const long exit = std::atol(syscall->field("exit").c_str());
    if (exit < 0 && exit > -4096) {
      const char* name = strerrorname_np(static_cast<int>(-exit));
      if (name != nullptr) d.error = name;
    }
  }
  // A shell's `>/dev/stderr` opens with O_CREAT, which Landlock judges as making a file in the
  // descriptor directory: "fs.make_reg /proc/PID/fd" (session 19's diff review).
  const std::string fs_path = access.field("path");
  const bool reopened_descriptor =
      std::find(context.handed_files.begin(), context.handed_files.end(), fs_path) !=
          context.handed_files.end() ||
      (has_blocker(blockers, "fs.make_reg") && is_process_fd_directory(fs_path));
  if (d.mechanism == "landlock-fs" && reopened_descriptor) {
    // Session 19's attack review: "add the operator's log directory to runtime" for a module
    // that reopened its own stderr by path; following that would let modules read it.
    d.object = fs_path;
    d.reason =
        "a file the module was handed as its standard input, output or error, opened again by "
        "path (/dev/stdout, /dev/stderr, /proc/self/fd/N): never granted (it is the caller's "
        "file); read or write the descriptor it has instead (>&2, not >/dev/stderr)";
    return d;
  }
  if (d.mechanism == "landlock-fs") {
    const std::string& path = fs_path;
    d.object = path;
    const bool creates_or_removes = blockers.find("make_") != std::string::npos ||
                                    blockers.find("remove_") != std::string::npos ||
                                    blockers.find("refer") != std::string::npos;
    // An execve is refused execute and, on Linux 6.15 and later, read_file with it (the
    // kernel opens the file to read it): "fs.execute,fs.read_file" is an execution too.
    if (has_blocker(blockers, "fs.execute")) {
      bool writable = false;
      for (const auto& dir : context.writable) writable = writable || under(path, dir);
      if (writable && !context.exec_writable) {
        d.reason = "execute in a writable directory (work, data, temp): exec_writable is false";
        d.allowed_by = "set \"exec_writable\": true";
        d.grant = {{"key", "exec_writable"}, {"set", true}};
      } else {
        d.reason = "execute " + path + ": not granted";
        grant_or_refuse(d, path, "add " + path + " (or its directory) to \"tools\" or \"runtime\"",
                        {{"key", "tools"}, {"add", path}}, context);
      }
    } else if (blockers == "fs.read_file" || blockers == "fs.read_dir" ||
               blockers == "fs.read_file,fs.read_dir") {
      const std::string dir = blockers == "fs.read_dir" ? path : parent_of(path);
      d.reason = "read under " + dir + ": not granted";
      // Read and execute, not data's read and write (attack review): a module proposes its own
      // grants by being refused, and a read must not buy it the right to write there.
      grant_or_refuse(d, dir,
                      "add " + dir +
                          " to \"runtime\" or \"tools\" (read and execute), or to \"data\" "
                          "when the module writes there too",
                      {{"key", "runtime"}, {"add", dir}}, context);
    } else if (blockers.starts_with("fs.ioctl_dev")) {
      // Landlock ABI 5: no policy element grants device ioctls, the base system's devices
      // included, so isatty() on a /dev/null the module opened is answered EACCES, not ENOTTY
      // (programs take both as "not a terminal").
      d.reason =
          "ioctl on a device the module opened: Landlock refuses device ioctls to every module "
          "(isatty() on /dev/null is answered EACCES instead of ENOTTY, to the same effect)";
    } else {
      const std::string dir = creates_or_removes ? path : parent_of(path);
      d.reason = "write under " + dir + ": not granted";
      grant_or_refuse(d, dir, "add " + dir + " to \"data\" (or make it the policy's \"work\")",
                      {{"key", "data"}, {"add", dir}}, context);
      // Session 18's real-programs review: every JVM start makes /tmp/hsperfdata_USER, which
      // no java.io.tmpdir moves (the record names only the directory, /tmp).
      if (dir == "/tmp" && has_blocker(blockers, "fs.make_dir") &&
          d.executable.ends_with("/java")) {
        d.reason =
            "write under /tmp: not granted (HotSpot makes its performance data, "
            "/tmp/hsperfdata_USER, there whatever java.io.tmpdir says: run java with "
            "-XX:-UsePerfData; jps and jcmd, which need it and an attach socket, cannot work in "
            "a module, which never listens)";
      }
      // Session 19's real-programs review: glibc's tmpfile(3) (ed, many C programs) makes an
      // unnamed O_TMPFILE file in P_tmpdir, /tmp, whatever TMPDIR says; the record names it
      // "/tmp/#INODE (deleted)". No policy moves it, so the TMPDIR advice misled.
      if (dir == "/tmp" && unnamed_temporary_file(path)) {
        d.reason =
            "an unnamed temporary file (O_TMPFILE) in /tmp: not granted (glibc's tmpfile(3) "
            "makes its file there whatever TMPDIR says, and no policy grants /tmp): the "
            "module's temporary files go in its TMPDIR" +
            (context.temp.empty() ? std::string(", the policy's \"temp\"")
                                  : ", the policy's \"temp\" (" + context.temp + ")") +
            ": create them there (mkstemp(3), Python's tempfile)";
      }
    }
  } else if (d.mechanism == "landlock-net") {
    // A connect names its destination (daddr, dest); a bind its own address (saddr, src),
    // and lsm_audit leaves out a port 0 (any free port) and an address it has none for.
    const bool connect = blockers == "net.connect_tcp";
    const std::string address = access.field(connect ? "daddr" : "saddr");
    std::string port = access.field(connect ? "dest" : "src");
    if (port.empty()) port = connect ? "?" : "0";
    d.object = address.empty()                          ? "port " + port
               : address.find(':') != std::string::npos ? "[" + address + "]:" + port
                                                        : address + ":" + port;
    const bool listed =
        std::find(context.egress_literals.begin(), context.egress_literals.end(),
                  canonical_endpoint(address, port)) != context.egress_literals.end();
    if (connect && listed) {
      // Session 18's review: "name the destination in egress" for one that is named there.
      d.reason = "direct TCP connections: " + d.object +
                 " is on the module's egress allowlist, but a module reaches it only through "
                 "the agent's proxy: connect through https_proxy (the environment's "
                 "HTTPS_PROXY)";
    } else if (connect) {
      d.reason =
          "direct TCP connections: a module reaches other hosts only through the agent's "
          "proxy (name the destination in \"egress\" and connect through https_proxy)";
      // The proxy refuses these whatever the allowlist says (docs/proxy.md).
      if (address.starts_with("127.") || address == "::1" || address.starts_with("169.254.") ||
          address.starts_with("fe80:")) {
        d.reason += "; loopback and link-local addresses are never reachable, not even there";
      }
    } else {
      d.reason = "binding a TCP port: never allowed for a module";
    }
  } else if (blockers == "scope.signal") {
    // The target as lsm_audit names a task: opid=PID ocomm=NAME.
    d.object = "pid " + access.field("opid");
    d.reason = "signal to a process outside the module's sandbox (Landlock scope): never allowed";
  } else {
    // scope.abstract_unix_socket: lsm_audit writes the socket's address as path=, and an
    // abstract one (leading NUL) as hexadecimal; it is named as ss(8) does, "@name".
    d.object = access.field("path");
    if (d.object.starts_with('\0')) {
      std::replace(d.object.begin(), d.object.end(), '\0', '@');
      d.reason =
          "connect to an abstract unix socket outside the module's sandbox (Landlock scope): "
          "never allowed (a module reaches local services through the broker)";
    } else {
      d.reason = "outside the module's sandbox (Landlock scope): never allowed";
    }
  }
  return d;
}

std::vector<Denial> LandlockAuditEvents::feed(const AuditRecord& record) {
  std::vector<Denial> out;
  if (record.type == kAuditLandlockDomain) {
    // The pid is the module's first process's for as long as the reader runs: the supervisor
    // reaps that process only after the reader has stopped (supervisor.cpp, before_reap). A
    // domain made earlier by a process that had that pid is a module's, made with its real uid:
    // the run's own was made with the launcher's (the constructor).
    if (record.field("status") == "allocated" &&
        std::atoll(record.field("pid").c_str()) == module_pid_ &&
        record.field("uid") == std::to_string(maker_uid_) &&
        std::find(domains_.begin(), domains_.end(), record.field("domain")) == domains_.end()) {
      domains_.push_back(record.field("domain"));
    }
    return out;
  }
  if (record.type != kAuditLandlockAccess && record.type != kAuditSyscall &&
      record.type != kAuditEndOfEvent) {
    return out;
  }
  // Only events that hold a Landlock access record are kept open.
  auto it = open_.find(record.serial);
  if (it == open_.end()) {
    if (record.type != kAuditLandlockAccess) return out;
    if (open_.size() >= kMaxOpenEvents) {
      auto oldest = finish(order_.front());
      out.insert(out.end(), oldest.begin(), oldest.end());
    }
    it = open_.emplace(record.serial, Event{}).first;
    order_.push_back(record.serial);
  }
  if (record.type == kAuditLandlockAccess) it->second.access.push_back(record);
  if (record.type == kAuditSyscall) it->second.syscall = record;
  if (record.type == kAuditEndOfEvent) {
    auto done = finish(record.serial);
    out.insert(out.end(), done.begin(), done.end());
  }
  return out;
}

std::vector<Denial> LandlockAuditEvents::finish(const std::string& serial) {
  std::vector<Denial> out;
  auto it = open_.find(serial);
  if (it == open_.end()) return out;
  for (const auto& access : it->second.access) {
    if (std::find(domains_.begin(), domains_.end(), access.field("domain")) == domains_.end()) {
      continue;
    }
    out.push_back(
        landlock_denial(access, it->second.syscall ? &*it->second.syscall : nullptr, context_));
  }
  open_.erase(it);
  order_.erase(std::find(order_.begin(), order_.end(), serial));
  return out;
}

std::vector<Denial> LandlockAuditEvents::flush() {
  std::vector<Denial> out;
  while (!order_.empty()) {
    auto done = finish(order_.front());
    out.insert(out.end(), done.begin(), done.end());
  }
  return out;
}

}  // namespace oarbank
