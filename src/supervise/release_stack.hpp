// What one sandbox-run has made, as a stack of named releases (pure: no kernel call of its
// own, so its order is unit-tested without root). Each thing the module run makes (the run
// record, the leaf, the created directories, the network namespace, the proxy, the terminal)
// is pushed right after it is made, with the action that undoes it; releases run in reverse
// order of acquisition, each at most once, on every path: an exception unwinding the owner,
// an early return, the end of the run. As nsjail and crun tear a container down, but as one
// list instead of cleanup code at each return.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "plan/launch_steps.hpp"

namespace oarbank {

class ReleaseStack {
 public:
  ReleaseStack() = default;
  ReleaseStack(const ReleaseStack&) = delete;
  ReleaseStack& operator=(const ReleaseStack&) = delete;
  ~ReleaseStack();  // releases what is left; an exception from a release is dropped here

  // `name` says what is released (a step's name), for messages and tests. Returns the
  // entry's position, for keep().
  std::size_t push(std::string name, std::function<void()> release);
  // Named after the step that made it (plan/launch_steps.hpp).
  std::size_t push(LaunchStep step, std::function<void()> release) {
    return push(std::string(step_name(step)), std::move(release));
  }
  // The thing at `position` outlives the run (the directories a module ran with hold its
  // data): its release is dropped, the entry stays (its place in the order).
  void keep(std::size_t position);
  // Releases every entry pushed after the first `depth` ones, newest first, and pops them. A
  // release that throws is not retried, and does not stop the ones after it: the first
  // exception is rethrown once all ran.
  void release_above(std::size_t depth);
  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  // The names held, oldest first.
  [[nodiscard]] std::vector<std::string> names() const;

 private:
  struct Entry {
    std::string name;
    std::function<void()> release;  // empty: kept
  };
  std::vector<Entry> entries_;
};

}  // namespace oarbank
