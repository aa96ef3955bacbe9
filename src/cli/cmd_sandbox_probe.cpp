// sandbox-probe OP [ARGS]: hidden. The module that sandbox-report --verify runs under the real
// launcher. Prints "ok" or "errno ENAME" for one operation; exits 0, 2 on a bad request.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/commands.hpp"

namespace oarbank::cli {
namespace {

int report(long rc) {
  if (rc < 0) {
    const char* name = strerrorname_np(errno);
    std::printf("errno %s\n", name != nullptr ? name : "?");
  } else {
    std::printf("ok\n");
  }
  return 0;
}

int run(const std::vector<std::string>& args) {
  if (args.empty()) return 2;
  const std::string& op = args[0];
  const std::string arg = args.size() > 1 ? args[1] : "";
  if (op == "read") return report(::open(arg.c_str(), O_RDONLY | O_CLOEXEC));
  if (op == "write") return report(::open(arg.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  if (op == "listen") return report(::listen(-1, 1));  // allowed: EBADF; refused: EPERM
  // MODE in octal: the setid-files row's probes (setuid 04000, setgid 02000).
  const auto mode = [&args] {
    return static_cast<mode_t>(std::strtoul(args.size() > 2 ? args[2].c_str() : "", nullptr, 8));
  };
  if (op == "create") return report(::open(arg.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, mode()));
  if (op == "chmod") return report(::chmod(arg.c_str(), mode()));
  if (op == "mkdir") return report(::mkdir(arg.c_str(), mode()));
  if (op == "socket") {
    if (arg == "inet") return report(::socket(AF_INET, SOCK_STREAM, 0));
    if (arg == "udp") return report(::socket(AF_INET, SOCK_DGRAM, 0));
    if (arg == "unix") return report(::socket(AF_UNIX, SOCK_STREAM, 0));
    return 2;
  }
  if (op == "connect") {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return report(-1);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(std::stoi(arg)));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    // "connect PORT ADDRESS": another IPv4 address than 127.0.0.1 (the namespace's proof).
    if (args.size() > 2 && ::inet_pton(AF_INET, args[2].c_str(), &addr.sin_addr) != 1) return 2;
    return report(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr));
  }
  if (op == "connect-abstract") {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) return report(-1);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path + 1, arg.data(), std::min(arg.size(), sizeof addr.sun_path - 1));
    return report(
        ::connect(fd, reinterpret_cast<sockaddr*>(&addr),
                  static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + arg.size())));
  }
  if (op == "kill") return report(::kill(std::stoi(arg), 0));
  return 2;
}

}  // namespace

// It runs inside the sandbox: it leaves with _exit, so nothing at exit (a sanitizer's leak
// check, which needs ptrace) meets the filter.
void run_sandbox_probe(const std::vector<std::string>& args) {
  const int code = run(args);
  std::fflush(stdout);
  ::_exit(code);
}

}  // namespace oarbank::cli
