#include "plan/seccomp_compact.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace oarbank::seccomp {
namespace {

constexpr std::uint64_t kAllBits = std::numeric_limits<std::uint64_t>::max();

// A mask whose set bits are the low ones (0xf, 0xffffffff, all 64): its values split into
// aligned blocks by clearing low bits of the mask.
bool low_bits_mask(std::uint64_t mask) { return mask == kAllBits || (mask & (mask + 1)) == 0; }

struct GroupKey {
  std::string syscall;
  int number = -1;
  int errno_value = 0;
  bool quiet = false;
  bool recorded = false;
  std::vector<ArgCheck> prefix;  // the checks before the varying one, in order
  unsigned arg = 0;
  std::uint64_t mask = kAllBits;  // kAllBits: Equal and Greater; else MaskedEqual's mask
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 sees a literal 0 in the defaulted <=>.
  friend auto operator<=>(const GroupKey&, const GroupKey&) = default;
};

struct Group {
  std::vector<std::uint64_t> values;   // refused values (under the mask)
  std::optional<std::uint64_t> above;  // refused: every value greater than this
  std::vector<std::size_t> members;    // indices of the rules it replaces
  bool decided = false;                // at its first rule
  bool compacted = false;              // its blocks replaced its rules
};

// The rule's group, when its last check can join one.
std::optional<GroupKey> key_of(const Rule& rule) {
  if (rule.args.empty()) return std::nullopt;
  const ArgCheck& last = rule.args.back();
  GroupKey key{rule.syscall,     rule.syscall_number_x86_64,
               rule.errno_value, rule.quiet,
               rule.recorded,    std::vector<ArgCheck>(rule.args.begin(), rule.args.end() - 1),
               last.arg,         kAllBits};
  if (last.op == Compare::MaskedEqual) {
    // A value with bits outside its mask never matches: such a rule is left alone.
    if (!low_bits_mask(last.mask) || (last.value & ~last.mask) != 0) return std::nullopt;
    key.mask = last.mask;
  }
  return key;
}

Rule with_last(const Rule& model, const GroupKey& key, std::optional<ArgCheck> last) {
  Rule rule{model.syscall,     model.syscall_number_x86_64,
            model.errno_value, key.prefix,
            model.why,         model.quiet,
            model.recorded};
  if (last) rule.args.push_back(*last);
  return rule;
}

// The refused set of a group as blocks: [from, to] intervals cut into aligned power-of-two
// blocks, each "(arg & (mask with the block's low bits cleared)) == start"; the interval that
// reaches the top of a 64-bit domain is one "greater than".
std::vector<Rule> blocks_of(const Rule& model, const GroupKey& key, Group group) {
  std::sort(group.values.begin(), group.values.end());
  group.values.erase(std::unique(group.values.begin(), group.values.end()), group.values.end());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> intervals;
  for (std::uint64_t v : group.values) {
    if (group.above && v > *group.above) continue;  // inside the top interval already
    if (!intervals.empty() && intervals.back().second + 1 == v) {
      intervals.back().second = v;
    } else {
      intervals.emplace_back(v, v);
    }
  }
  std::optional<std::uint64_t> top_from;  // refused: every value from here up
  if (group.above) {
    top_from = *group.above + 1;
    if (!intervals.empty() && intervals.back().second + 1 == *top_from) {
      top_from = intervals.back().first;
      intervals.pop_back();
    }
  }
  std::vector<Rule> out;
  for (auto [from, to] : intervals) {
    std::uint64_t start = from;
    while (true) {
      // The largest block aligned at start that stays inside [start, to].
      std::uint64_t size = 1;
      while (size <= (key.mask >> 1) && start % (size * 2) == 0 && to - start >= size * 2 - 1) {
        size *= 2;
      }
      if (size == 1 && key.mask == kAllBits) {
        out.push_back(with_last(model, key, ArgCheck{key.arg, Compare::Equal, start, 0}));
      } else {
        out.push_back(with_last(
            model, key, ArgCheck{key.arg, Compare::MaskedEqual, start, key.mask & ~(size - 1)}));
      }
      if (to - start < size) break;  // the block ended at `to`
      start += size;
    }
  }
  if (top_from) {
    // Everything refused: the varying check goes; the prefix alone decides.
    out.push_back(
        *top_from == 0
            ? with_last(model, key, std::nullopt)
            : with_last(model, key, ArgCheck{key.arg, Compare::Greater, *top_from - 1, 0}));
  }
  return out;
}

}  // namespace

std::vector<Rule> compact_rules(const std::vector<Rule>& rules) {
  std::map<GroupKey, Group> groups;
  std::vector<std::optional<GroupKey>> keys(rules.size());
  for (std::size_t i = 0; i < rules.size(); ++i) {
    keys[i] = key_of(rules[i]);
    if (!keys[i]) continue;
    const ArgCheck& last = rules[i].args.back();
    if (last.op == Compare::Greater) {
      // "Greater than" joins only whole-64-bit groups; a second threshold, or one that refuses
      // nothing ("greater than" the largest value: its interval would start past the top), is
      // left alone.
      Group& group = groups[*keys[i]];
      if (keys[i]->mask != kAllBits || group.above || last.value == kAllBits) {
        keys[i].reset();
        continue;
      }
      group.above = last.value;
      group.members.push_back(i);
    } else {
      Group& group = groups[*keys[i]];
      group.values.push_back(last.value);
      group.members.push_back(i);
    }
  }
  // Each group is decided at its first rule: its blocks there, where they are fewer than its
  // rules (then its other rules go); else every rule as it is.
  std::vector<Rule> out;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (!keys[i]) {
      out.push_back(rules[i]);
      continue;
    }
    Group& group = groups.at(*keys[i]);
    if (!group.decided) {
      group.decided = true;
      std::vector<Rule> blocks = blocks_of(rules[i], *keys[i], group);
      if (blocks.size() < group.members.size()) {
        for (auto& rule : blocks) out.push_back(std::move(rule));
        group.compacted = true;
        continue;
      }
    }
    if (!group.compacted) out.push_back(rules[i]);
  }
  return out;
}

}  // namespace oarbank::seccomp
