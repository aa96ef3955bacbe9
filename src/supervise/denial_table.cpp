#include "supervise/denial_table.hpp"

namespace oarbank {

void DenialTable::add(const Denial& denial) {
  std::lock_guard lock(mutex_);
  const std::string key = denial.key();
  if (auto it = index_.find(key); it != index_.end()) {
    records_[it->second].count += denial.count;
    return;
  }
  if (records_.size() >= capacity_) {
    dropped_ += denial.count;
    return;
  }
  index_.emplace(key, records_.size());
  records_.push_back(denial);
}

std::vector<Denial> DenialTable::denials() const {
  std::lock_guard lock(mutex_);
  return records_;
}

std::uint64_t DenialTable::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

}  // namespace oarbank
