// What each of a module's own mounts (issue 12, src/apply/module_mounts.cpp) costs, on its
// own: ROUNDS forked children each make the namespace and the mounts the way the child of
// sandbox-run does, timing every call; the medians are printed in microseconds. Run as root
// (bench/run-mounts-bench.sh builds and runs it). Not linked with the agent: the calls are
// the same ones, written out, so that each can be timed alone.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

double now_us() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

constexpr int kSteps = 7;
const char* kNames[kSteps] = {
    "unshare(CLONE_NEWNS) + / private",           "tmpfs on /dev/shm",
    "a writable directory bind-mounted noexec",   "/proc hidepid=invisible",
    "devpts instance (fsopen/fsmount, parent)",   "devpts attached (move_mount)",
    "the module's exit (the namespace torn down)"};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: mounts_cost DIR [ROUNDS]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 200;
  std::vector<std::vector<double>> times(kSteps);
  for (int r = 0; r < rounds; ++r) {
    // The devpts instance is the parent's (sandbox-run's) part.
    double t0 = now_us();
    int ctx = fsopen("devpts", FSOPEN_CLOEXEC);
    fsconfig(ctx, FSCONFIG_SET_STRING, "ptmxmode", "0666", 0);
    fsconfig(ctx, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0);
    int devpts = fsmount(ctx, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
    close(ctx);
    const double devpts_us = now_us() - t0;
    int pipefd[2];
    if (pipe(pipefd) != 0 || devpts < 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
      double t[kSteps] = {};
      double a = now_us();
      if (unshare(CLONE_NEWNS) != 0 ||
          mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        _exit(1);
      double b = now_us();
      t[0] = b - a;
      if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                "size=67108864,nr_inodes=16384,mode=0700,uid=65534,gid=65534") != 0)
        _exit(2);
      a = now_us();
      t[1] = a - b;
      int fd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      int tree =
          open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
      mount_attr attr{};
      attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
      if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) != 0 ||
          move_mount(tree, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
        _exit(3);
      b = now_us();
      t[2] = b - a;
      if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible") !=
          0)
        _exit(4);
      a = now_us();
      t[3] = a - b;
      if (move_mount(devpts, "", AT_FDCWD, "/dev/pts", MOVE_MOUNT_F_EMPTY_PATH) != 0) _exit(5);
      b = now_us();
      t[5] = b - a;
      if (write(pipefd[1], t, sizeof t) != static_cast<ssize_t>(sizeof t)) _exit(6);
      _exit(0);
    }
    close(pipefd[1]);
    double t[kSteps] = {};
    const bool got = read(pipefd[0], t, sizeof t) == static_cast<ssize_t>(sizeof t);
    const double exit_start = now_us();
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    t[6] = now_us() - exit_start;
    close(devpts);
    if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "round %d failed (status %d)\n", r, status);
      return 1;
    }
    t[4] = devpts_us;
    for (int i = 0; i < kSteps; ++i) times[i].push_back(t[i]);
  }
  double total = 0;
  for (int i = 0; i < kSteps; ++i) {
    auto& v = times[i];
    std::sort(v.begin(), v.end());
    const double median = v[v.size() / 2];
    total += median;
    std::printf("%-45s median %7.1f us  p90 %7.1f us\n", kNames[i], median, v[v.size() * 9 / 10]);
  }
  std::printf("%-45s        %7.1f us (sum of medians)\n", "all", total);
  return 0;
}
