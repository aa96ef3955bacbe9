// sandbox-stock: the node's namespace stock (supervise/namespace_stock.hpp), a root service
// (packaging/systemd/oarbank-sandbox-stock.service) that keeps a root sandbox-run's
// namespaces made ahead of its start. Runs in the foreground until SIGTERM, SIGINT or SIGHUP.
#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <string>
#include <system_error>

#include "cli/commands.hpp"
#include "supervise/namespace_stock.hpp"
#include "supervise/run_state.hpp"
#include "sys/error.hpp"
#include "sys/service_notify.hpp"

namespace oarbank::cli {

int run_sandbox_stock(const StockArgs& args) {
  return run_guarded("sandbox-stock", "", [&] {
    int sets = 0;
    const char* end = args.sets.data() + args.sets.size();
    if (auto [at, ec] = std::from_chars(args.sets.data(), end, sets);
        ec != std::errc() || at != end || sets < 1 || sets > 64) {
      throw Error(ErrorKind::Usage,
                  "--sets " + args.sets + ": expected a whole number from 1 to 64");
    }
    if (::geteuid() != 0) {
      throw Error(ErrorKind::Unenforceable,
                  "the namespace stock makes network and IPC namespaces, which only root can: "
                  "run it as root (a sandbox-run that is not root makes none)");
    }
    // Blocked before it serves: its signalfd alone reads them.
    sigset_t stops;
    sigemptyset(&stops);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stops, sig);
    ::sigprocmask(SIG_BLOCK, &stops, nullptr);
    const std::string state_dir = run_state_dir();
    open_state_dir(state_dir, true);  // root's, 0700, no link on the way: as sandbox-run's
    return serve_namespace_stock(
        StockOptions{.state_dir = state_dir,
                     .sets_per_kind = static_cast<std::size_t>(sets),
                     .say =
                         [](const std::string& line) {
                           std::fprintf(stderr, "oarbank-agent sandbox-stock: %s\n", line.c_str());
                         },
                     .verbose = args.verbose,
                     // Type=notify (its unit): the agent's units are ordered after a stock
                     // that has sets queued, not one that has only started.
                     .ready =
                         [] {
                           if (int err = notify_service_ready(); err != 0) {
                             std::fprintf(stderr,
                                          "oarbank-agent sandbox-stock: note: READY=1 to "
                                          "$NOTIFY_SOCKET failed: %s\n",
                                          errno_text(err).c_str());
                           }
                         }});
  });
}

}  // namespace oarbank::cli
