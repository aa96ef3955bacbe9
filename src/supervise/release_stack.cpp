#include "supervise/release_stack.hpp"

#include <exception>
#include <utility>

namespace oarbank {

ReleaseStack::~ReleaseStack() {
  try {
    release_above(0);
  } catch (...) {  // NOLINT(bugprone-empty-catch): every release ran; nothing is left to undo
  }
}

std::size_t ReleaseStack::push(std::string name, std::function<void()> release) {
  entries_.push_back(Entry{std::move(name), std::move(release)});
  return entries_.size() - 1;
}

void ReleaseStack::keep(std::size_t position) {
  if (position < entries_.size()) entries_[position].release = nullptr;
}

void ReleaseStack::release_above(std::size_t depth) {
  std::exception_ptr first;
  while (entries_.size() > depth) {
    // Popped before it runs: a release runs once, even if it throws.
    Entry entry = std::move(entries_.back());
    entries_.pop_back();
    if (!entry.release) continue;
    try {
      entry.release();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

std::vector<std::string> ReleaseStack::names() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const auto& entry : entries_) names.push_back(entry.name);
  return names;
}

}  // namespace oarbank
