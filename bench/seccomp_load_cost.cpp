// What loading our seccomp programs costs against their length (docs/performance.md, issue
// 11's second pass): every precompiled program (apply/seccomp_programs.hpp, both refusal
// kinds) and a one-instruction allow-all, each loaded once by each of ROUNDS fresh children
// (as a launch loads it once, in a process of its own; the notify programs without
// SECCOMP_FILTER_FLAG_NEW_LISTENER), programs alternating within a round. Prints the median
// load per program with its length. The kernel converts and JITs every instruction and, since
// Linux 5.11, runs the program on constant input for every syscall number of every
// architecture to build its allow cache: a program's shape counts, not only its length.
//   oarbank-seccomp-load-cost [ROUNDS]   (default 200; pin it: taskset -c 1 chrt -f 10)
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "apply/seccomp_programs.hpp"

namespace {

double now_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// In a fresh child: no_new_privs, then the load timed; the microseconds come back by a pipe.
double load_once(const sock_filter* instructions, std::size_t length) {
  int fds[2];
  if (::pipe(fds) != 0) std::exit(1);
  const pid_t pid = ::fork();
  if (pid == 0) {
    sock_fprog program{static_cast<unsigned short>(length), const_cast<sock_filter*>(instructions)};
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    const double start = now_us();
    const long rc = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program);
    double took = rc == 0 ? now_us() - start : -1;
    if (::write(fds[1], &took, sizeof took) != static_cast<ssize_t>(sizeof took)) ::_exit(1);
    ::_exit(0);
  }
  ::close(fds[1]);
  double took = -1;
  if (::read(fds[0], &took, sizeof took) != static_cast<ssize_t>(sizeof took)) took = -1;
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  if (took < 0) {
    std::fprintf(stderr, "seccomp-load-cost: a load of %zu instructions failed\n", length);
    std::exit(1);
  }
  return took;
}

}  // namespace

int main(int argc, char** argv) {
  namespace sc = oarbank::seccomp;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 200;
  static const sock_filter kAllow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  struct Side {
    const char* kind;
    int variant;
    sc::Program program;
    std::vector<double> took;
  };
  std::vector<Side> sides{{"allow-all", -1, {kAllow, 1}, {}}};
  for (int i = 0; i < sc::kVariantCount; ++i) {
    sides.push_back({"errno", i, sc::kPrograms[i], {}});
    sides.push_back({"notify", i, sc::kNotifyPrograms[i], {}});
  }
  for (int round = -10; round < rounds; ++round) {
    for (auto& side : sides) {
      const double took = load_once(side.program.instructions, side.program.length);
      if (round >= 0) side.took.push_back(took);
    }
  }
  std::printf("%-10s %8s %13s %11s %9s\n", "program", "variant", "instructions", "median us",
              "p90 us");
  for (auto& side : sides) {
    std::sort(side.took.begin(), side.took.end());
    std::printf("%-10s %8d %13zu %11.1f %9.1f\n", side.kind, side.variant, side.program.length,
                side.took[side.took.size() / 2], side.took[side.took.size() * 9 / 10]);
  }
  return 0;
}
