#include "apply/egress_relay.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <iterator>
#include <vector>

#include "apply/descriptors.hpp"
#include "apply/module_network.hpp"
#include "apply/prepared_exec.hpp"
#include "apply/relay_loop.hpp"
#include "plan/launch_steps.hpp"
#include "plan/mechanism_network.hpp"
#include "sys/error.hpp"
#include "sys/socket_owner.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {
namespace {

[[noreturn]] void relay_failed(const std::string& what, int err) {
  throw step_error(LaunchStep::Network, what, err);
}

// Where the relay's set-up stopped, as it tells the launcher.
enum class RelayStep : int {
  Ready = 0,
  JoinNodeNamespace,
  DropRoot,
  NoNewPrivs,
  NotRootsListener,  // a listener at proxy_listen is another uid's (its owner sent along)
  AskOwners,
};

// What each step that failed was doing, for the launcher's line (NotRootsListener has one of
// its own).
const char* relay_step_text(RelayStep step) {
  switch (step) {
    case RelayStep::JoinNodeNamespace:
      return "setns back to the node's namespace";
    case RelayStep::DropRoot:
      return "dropping root (setgroups, setresgid, setresuid)";
    case RelayStep::NoNewPrivs:
      return "prctl(PR_SET_NO_NEW_PRIVS, PR_SET_DUMPABLE)";
    case RelayStep::AskOwners:
      // Fail closed: without an answer no connection could be checked.
      return "asking the kernel whose socket listens at proxy_listen (NETLINK_SOCK_DIAG, else "
             "/proc/self/net/tcp)";
    case RelayStep::Ready:
    case RelayStep::NotRootsListener:
      break;
  }
  return "";
}

// What the relay tells the launcher once it is set up: Ready, or the step that failed and errno.
struct ReadyMessage {
  RelayStep step = RelayStep::Ready;
  int err = 0;
  uid_t owner = 0;  // NotRootsListener: whose socket listens at proxy_listen
};

// The relay process: never returns.
[[noreturn]] void relay_main(const RelaySettings& settings, const RelayTarget& target, int listener,
                             int node_netns, int module_pidfd, int ready) {
  // It runs outside the sandbox, beside the module: job-control and terminal signals meant
  // for the module's process group do not end it; it ends with the module (its pidfd).
  for (int sig : {SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU}) {
    ::signal(sig, SIG_IGN);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Not the operator's terminal, nor the caller's output pipes (a caller that reads them to
  // their end would wait for the relay).
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd <= 2; ++fd) ::dup2(null, fd);
  close_all_but({listener, node_netns, module_pidfd, ready});
  ReadyMessage message;
  if (::setns(node_netns, CLONE_NEWNET) != 0) {
    message = {RelayStep::JoinNodeNamespace, errno};
  } else if (::setgroups(0, nullptr) != 0 ||
             ::setresgid(settings.gid, settings.gid, settings.gid) != 0 ||
             ::setresuid(settings.uid, settings.uid, settings.uid) != 0) {
    message = {RelayStep::DropRoot, errno};
  } else if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
             ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    // Not dumpable: the module (the same uid) cannot read this process's memory through
    // /proc/<pid>/mem, which still holds what the launcher held (its caller's environment).
    message = {RelayStep::NoNewPrivs, errno};
  } else if (auto owner = tcp_listener_owner(target.address); owner && *owner != 0) {
    // Attack review (session 16): proxy_listen's port is unprivileged, so when no root proxy
    // listens there any local user can, and would be this module's proxy for every
    // destination. Refused at the launch when seen; each connection is checked again.
    message = {RelayStep::NotRootsListener, 0, *owner};
  } else if (!owner && errno != ENOENT) {
    message = {RelayStep::AskOwners, errno};
  }
  ::close(node_netns);
  [[maybe_unused]] auto n = ::write(ready, &message, sizeof message);
  ::close(ready);
  if (message.step != RelayStep::Ready) ::_exit(1);
  ::prctl(PR_SET_NAME, "oarbank-relay", 0, 0, 0);
  run_relay(listener, target, module_pidfd, settings.max_connections);
  ::_exit(0);
}

}  // namespace

void start_egress_relay(const RelaySettings& settings) {
  RelayTarget target;
  target.length = socket_address(settings.proxy_host, settings.proxy_port, target.address);
  UniqueFd node_netns(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!node_netns.valid()) relay_failed("open /proc/self/ns/net", errno);
  if (::unshare(CLONE_NEWNET) != 0) relay_failed("unshare(CLONE_NEWNET)", errno);
  bring_loopback_up();
  UniqueFd listener = listen_on(settings.proxy_host, settings.proxy_port);
  // pidfd_open (Linux 5.3; Landlock's port rules need 6.7): readable once this process has
  // exited, whichever program it is by then.
  UniqueFd module_pidfd(static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0)));
  if (!module_pidfd.valid()) relay_failed("pidfd_open", errno);
  int ready_pipe[2];
  if (::pipe2(ready_pipe, O_CLOEXEC) != 0) relay_failed("pipe2", errno);
  UniqueFd ready_read(ready_pipe[0]);
  UniqueFd ready_write(ready_pipe[1]);
  // Each relay holds ~6 descriptors per connection: keep under this process's limit.
  rlimit files{};
  RelaySettings bounded = settings;
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    const std::size_t fit = files.rlim_cur > 32 ? (files.rlim_cur - 16) / 6 : 1;
    bounded.max_connections = std::max<std::size_t>(1, std::min(bounded.max_connections, fit));
  }
  // Twice forked: the relay is not the module's child (a module that waits for any child
  // must not reap it, nor see it), and the middle process exits at once.
  const pid_t middle = ::fork();
  if (middle < 0) relay_failed("fork (the relay)", errno);
  if (middle == 0) {
    ready_read.reset();
    const pid_t relay = ::fork();
    if (relay == 0) {
      relay_main(bounded, target, listener.get(), node_netns.get(), module_pidfd.get(),
                 ready_write.get());
    }
    ::_exit(relay < 0 ? 1 : 0);
  }
  int status = 0;
  while (::waitpid(middle, &status, 0) < 0 && errno == EINTR) {
  }
  ready_write.reset();
  ReadyMessage message;
  ssize_t got = 0;
  do {
    got = ::read(ready_read.get(), &message, sizeof message);
  } while (got < 0 && errno == EINTR);
  if (got != static_cast<ssize_t>(sizeof message)) {
    relay_failed("the relay to the proxy did not start (fork)", got < 0 ? errno : ECHILD);
  }
  if (message.step < RelayStep::Ready || message.step > RelayStep::AskOwners) {
    relay_failed("the relay to the proxy answered nonsense", EPROTO);
  }
  if (message.step == RelayStep::NotRootsListener) {
    relay_failed(fmt::format("proxy_listen {}:{} is served by a socket of uid {}, not root's: "
                             "any local user may listen on that port and would be this "
                             "module's proxy; run egress-proxy as root there",
                             settings.proxy_host, settings.proxy_port, message.owner),
                 0);
  }
  if (message.step != RelayStep::Ready) {
    relay_failed(std::string("the relay to the proxy: ") + relay_step_text(message.step),
                 message.err);
  }
  // The listener, the node's namespace and the pidfd are the relay's now; this process (the
  // module to be) keeps none of them.
}

void egress_relay_before_exec(const PreparedExec& prepared) {
  // Root: the module's own network namespace, the proxy reachable in it through a relay
  // (docs/launcher.md, "Egress: the module's own network namespace").
  if (prepared.policy.net != NetMode::EgressAllowlist ||
      egress_confinement(prepared.features, prepared.config) != EgressConfinement::Namespace) {
    return;
  }
  start_egress_relay(
      RelaySettings{.proxy_host = prepared.config.proxy_host,
                    .proxy_port = prepared.config.proxy_port,
                    .uid = prepared.config.module_uid,
                    .gid = prepared.config.module_gid,
                    .max_connections = prepared.config.proxy_max_tunnels_per_module});
}

}  // namespace oarbank
