// What a vfork-style clone3 costs by itself (docs/performance.md, "sandbox-run's own path, second
// pass"): the supervisor's spawn (supervise/spawn.cpp) is clone3(CLONE_VM | CLONE_VFORK |
// CLONE_PIDFD [| CLONE_INTO_CGROUP]) onto a stack of its own. Each round times, per variant, the
// parent's clone3 until it returns (the child runs until its _exit, as CLONE_VFORK makes it) and
// the child's first instruction (a vDSO clock read into the shared memory, no syscall). Variants
// alternate within a round; medians over the rounds. Run it pinned to one CPU, as root for the
// leaf variant:
//   oarbank-clone-cost [ROUNDS] [CGROUP_PARENT]   (default 2000, /sys/fs/cgroup/unified)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static volatile double child_start;

// The same trampoline as spawn.cpp's: the child runs fn(arg) on the new stack.
__asm__(
    ".text\n"
    ".globl bench_clone3_on_stack\n"
    "bench_clone3_on_stack:\n"
    "  mov %rdx, %r8\n"
    "  mov %rcx, %r9\n"
    "  mov $435, %eax\n"
    "  syscall\n"
    "  test %rax, %rax\n"
    "  jz 1f\n"
    "  ret\n"
    "1:\n"
    "  xor %ebp, %ebp\n"
    "  mov %r9, %rdi\n"
    "  call *%r8\n"
    "  mov $127, %edi\n"
    "  mov $60, %eax\n"
    "  syscall\n"
    "  hlt\n");
long bench_clone3_on_stack(struct clone_args* args, size_t size, void (*fn)(void*), void* arg);

static void child_main(void* arg) {
  (void)arg;
  child_start = now_us();
  syscall(SYS_exit, 0);
}

// One clone; returns the parent's clone3 time, sets *to_child to the child's start latency.
static double one(int vm, int cgroup_fd, double* to_child) {
  int pidfd = -1;
  struct clone_args args;
  memset(&args, 0, sizeof args);
  args.flags = CLONE_PIDFD;
  args.pidfd = (uint64_t)(uintptr_t)&pidfd;
  args.exit_signal = SIGCHLD;
  if (cgroup_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = (uint64_t)cgroup_fd;
  }
  void* stack = NULL;
  const size_t kStack = 256 * 1024;
  if (vm) {
    stack =
        mmap(NULL, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    args.flags |= CLONE_VM | CLONE_VFORK;
    args.stack = (uint64_t)(uintptr_t)stack;
    args.stack_size = kStack;
  }
  child_start = 0;
  double t0 = now_us();
  long pid;
  if (vm) {
    pid = bench_clone3_on_stack(&args, sizeof args, child_main, NULL);
  } else {
    pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0) {
      child_main(NULL);
    }
  }
  double t1 = now_us();
  if (pid < 0) {
    fprintf(stderr, "clone3: %s\n", strerror((int)-pid));
    exit(1);
  }
  if (vm) munmap(stack, kStack);
  waitpid((pid_t)pid, NULL, 0);
  close(pidfd);
  *to_child = vm ? child_start - t0 : 0;
  return t1 - t0;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[n / 2];
}

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 2000;
  const char* parent = argc > 2 ? argv[2] : "/sys/fs/cgroup/unified";
  char leaf[512];
  snprintf(leaf, sizeof leaf, "%s/oarbank-clone-cost-%d", parent, (int)getpid());
  int leaf_fd = -1;
  if (mkdir(leaf, 0755) == 0) leaf_fd = open(leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  enum { kPlain, kLeaf, kFds, kSupervisor, kFork, kVariants };
  const char* names[kVariants] = {
      "clone3(VM|VFORK)", "  + INTO_CGROUP (leaf)", "  + 24 O_PATH descriptors",
      "  + signalfd, timerfd, socketpair, blocked signals, subreaper", "clone3 without VM (fork)"};
  double* t[kVariants];
  double* c[kVariants];
  for (int v = 0; v < kVariants; ++v) {
    t[v] = calloc((size_t)rounds, sizeof(double));
    c[v] = calloc((size_t)rounds, sizeof(double));
  }
  int extra[24];
  for (int r = -50; r < rounds; ++r) {
    for (int v = 0; v < kVariants; ++v) {
      if (v == kLeaf && leaf_fd < 0) continue;
      int fds = 0, sfd = -1, tfd = -1, sp[2] = {-1, -1};
      sigset_t old;
      if (v == kFds || v == kSupervisor) {
        for (; fds < 24; ++fds) extra[fds] = open("/usr", O_PATH | O_CLOEXEC);
      }
      if (v == kSupervisor) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigprocmask(SIG_BLOCK, &set, &old);
        sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp);
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
      }
      double to_child = 0;
      double took = one(v != kFork, v == kLeaf ? leaf_fd : -1, &to_child);
      if (r >= 0) {
        t[v][r] = took;
        c[v][r] = to_child;
      }
      for (int i = 0; i < fds; ++i) close(extra[i]);
      if (v == kSupervisor) {
        close(sfd);
        close(tfd);
        close(sp[0]);
        close(sp[1]);
        struct signalfd_siginfo info;
        (void)info;
        sigprocmask(SIG_SETMASK, &old, NULL);
      }
    }
  }
  printf("%-62s %14s %22s\n", "variant (medians)", "clone3 µs", "clone3 -> child µs");
  for (int v = 0; v < kVariants; ++v) {
    if (v == kLeaf && leaf_fd < 0) {
      printf("%-62s (no leaf: %s not writable)\n", names[v], parent);
      continue;
    }
    printf("%-62s %14.1f %22.1f\n", names[v], median(t[v], rounds), median(c[v], rounds));
  }
  if (leaf_fd >= 0) {
    close(leaf_fd);
    rmdir(leaf);
  }
  return 0;
}
