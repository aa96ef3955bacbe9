#include "plan/mount_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace oarbank {

MountPlan make_mount_plan(const Policy& policy, const NodeConfig& config, std::uint32_t uid,
                          std::uint32_t gid, std::vector<std::string> writable_dirs) {
  MountPlan plan;
  plan.enabled = true;
  // tmpfs pages are charged to the memory cgroup of the process that writes them, so a
  // module's shared memory counts against its memory.max too; the size bounds it where there
  // is none. A reservation smaller than the node's size is the bound.
  plan.shm_size_bytes = config.module_shm_max_bytes;
  if (policy.reservations.memory_bytes) {
    plan.shm_size_bytes =
        std::min<std::uint64_t>(plan.shm_size_bytes, *policy.reservations.memory_bytes);
  }
  plan.uid = uid;
  plan.gid = gid;
  plan.writable_dirs = std::move(writable_dirs);
  plan.writable_noexec = !policy.exec_writable;
  return plan;
}

bool is_module_mount_point(const std::string& path) {
  return path == "/dev/shm" || path == "/proc" || path == "/dev/pts";
}

bool is_on_module_sysfs(const std::string& path) {
  return path == "/sys" || path.starts_with("/sys/");
}

namespace {

// One inode per 4 KiB page at most: a module cannot pin kernel memory in empty files beyond
// what its size allows. /dev/shm's and /tmp's tmpfs alike.
std::string tmpfs_size_options(const MountPlan& plan) {
  const std::uint64_t inodes = std::max<std::uint64_t>(plan.shm_size_bytes / 4096, 64);
  return fmt::format("size={},nr_inodes={}", plan.shm_size_bytes, inodes);
}

}  // namespace

std::string shm_mount_options(const MountPlan& plan) {
  return fmt::format("{},mode=0700,uid={},gid={}", tmpfs_size_options(plan), plan.uid, plan.gid);
}

std::string tmp_mount_options(const MountPlan& plan) {
  return tmpfs_size_options(plan) + ",mode=1777";
}

bool is_at_or_below_tmp(const std::string& path) {
  return path == "/tmp" || path.starts_with("/tmp/");
}

}  // namespace oarbank
