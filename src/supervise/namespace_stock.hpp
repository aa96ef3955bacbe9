// The namespace stock (docs/sandbox-run.md, "The namespace stock"): `sandbox-stock`, a root
// service of the node, makes the kernel objects of a module's world ahead of any run, so that
// a root sandbox-run takes them instead of making them on its start path. Making a network
// namespace is most of a world's cost (the kernel initializes every per-namespace subsystem
// for it: about 330 us here, half a bare exec), and the detached mqueue mount's release waits
// for an RCU grace period; neither depends on the module.
//
// One set is handed to one run and never to another: each namespace is entered by that run's
// module alone, exactly as one sandbox-run would have made it. What it holds is what
// sandbox-run makes without a stock (a network namespace with loopback alone, up only for a
// module whose filter lets it use it; an IPC namespace; its mqueue filesystem, detached; a
// devpts instance), so the module's world is the same either way, and a run without a stock
// (none running, empty, or not to be trusted) makes its own as before.
//
// A run never waits for the stock (a wake-up of another process costs 100 us and more on a
// virtual machine: a round trip would eat most of what the stock saves), and, while runs come,
// never wakes it either (the stock looks every 10 ms then: serve_namespace_stock). The stock queues
// its sets ahead in a socket pair per kind (loopback up, down), each set one message with its four
// descriptors, and names the pair's takers' end in the file "namespace-stock" of the run
// state directory (root's, 0700, walked without links by open_state_dir): its pid, and the
// descriptor's number and inode. A run takes that end with pidfd_getfd (Linux 5.6; root),
// checks it is that very socket, and takes one message without waiting (a message is taken
// whole by one reader). On the same end (a socket pair carries messages both ways) it sends
// "took", so that the stock makes another, and at its end it sends back what it still holds
// of the set, so that the releases that wait (a detached mount's: an RCU grace period, about
// 400 us of wall time here) happen in the stock, once the run has exited (the run sends its
// own pidfd with them, which the stock watches), off its path. The run checks that the queue
// was made by a process of root's, the one the file names (SO_PEERCRED: a pid reused by
// another user's process after the stock died names nothing it could forge), and that each
// descriptor it took is the kind of namespace or file system it must be; the stock, that
// neither namespace it made is the one it is in (the node's).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "sys/unique_fd.hpp"

namespace oarbank {

struct NamespaceSet {
  UniqueFd net;     // a network namespace holding loopback alone, up or down as asked
  UniqueFd ipc;     // an IPC namespace
  UniqueFd mqueue;  // a detached mount of that IPC namespace's mqueue file system
  UniqueFd devpts;  // a detached devpts instance (apply/module_mounts.hpp)
  UniqueFd notice;  // the takers' end of the stock's queue, for its notices (took, back)
  // Not the stock's: the module's own mount namespace, which the run's child made and sent to
  // its supervisor (supervisor.hpp, module_mounts). Given back with the rest, its teardown (an
  // RCU grace period that fs/namespace.c's namespace_unlock expedites: 130 us at the median
  // here, 400 at p90) is the stock's, not the module's exit, which the run waits for.
  UniqueFd mounts;
};

// The stock's address file in the run state directory.
std::string namespace_stock_file(const std::string& state_dir);

// One set from the stock of `state_dir`, with loopback up or not, without waiting. Nothing
// when there is no stock (no file, its process gone), it has no set ready, or what is there
// is not to be trusted: then `why` (when not null) says why, for a note line (empty for the
// first two: there is nothing to say). Never throws; a run without a set makes its own.
std::optional<NamespaceSet> take_namespace_set(const std::string& state_dir, bool loopback_up,
                                               std::string* why);

// Sends what `set` still holds back to the stock, which closes it (without waiting; what
// cannot be sent is closed here). Never throws.
void give_back_namespace_set(NamespaceSet set);

// One set made here, as take_namespace_set hands it (without a lease). Throws Error
// (StepFailed), its step naming the call that failed.
NamespaceSet make_namespace_set(bool loopback_up);

struct StockOptions {
  std::string state_dir;
  std::size_t sets_per_kind = 2;  // sets kept queued for each kind (loopback up, down)
  std::function<void(const std::string&)> say;
  bool verbose = false;  // a line for each set made, taken and given back (namespace inodes)
  // Called once the first sets are queued and the file names them (the service manager's
  // readiness: sys/service_notify.hpp).
  std::function<void()> ready;
};

// Serves the stock of options.state_dir until SIGTERM, SIGINT or SIGHUP (which the caller
// has blocked: read here by a signalfd), then removes its file. Returns 0 then. Throws Error
// before it serves: another stock serves the directory (Busy: it holds the directory's
// flock, held here while serving), or its file cannot be written. A set it cannot make is said
// (options.say) and tried again a second later; runs meanwhile make their own.
int serve_namespace_stock(const StockOptions& options);

}  // namespace oarbank
