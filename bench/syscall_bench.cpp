// oarbank-syscall-bench: what the precompiled seccomp filters cost per syscall
// (docs/performance.md).
//
// A seccomp filter cannot be removed, so each filter lives in its own child: the driver forks one
// child per filter (none, or kPrograms[variant]); each sets no_new_privs (every side, for
// symmetry), loads its filter, then runs, on request, one Google Benchmark at a time
// (--benchmark_min_time, default 0.02 s). The driver asks the children in turn, in a rotating
// order, benchmark by benchmark, for --rounds rounds: the times of one ratio are measured tens
// of milliseconds apart. The figure that counts is the median over rounds of the per-round
// ratio filtered/unfiltered: on a shared virtual machine a ratio of two times measured close
// together is far steadier than either time.
//
// The kernel (5.11+) caches the filter's verdict per syscall number when the program allows
// that number whatever the arguments are ("constant allow"): such syscalls never run the BPF
// program. getppid and read are in that set for every variant. ioctl, socketpair, openat and
// (under the egress variants) sendto have argument checks, so they run the program on every
// call.
//
//   oarbank-syscall-bench [--rounds=N] [--filters=none,allow,0,2] [--cpu=N]
//   [--benchmark_min_time=S] oarbank-syscall-bench --only=FILTER [--benchmark_* ...]   one filter,
//   in this process, console output
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "apply/seccomp_apply.hpp"
#include "plan/seccomp_rules.hpp"

namespace {

// --- The syscalls measured. --------------------------------------------------------------

// Verdict cached: no argument checks on getppid in any variant.
void BM_getppid(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(::syscall(SYS_getppid));
}
BENCHMARK(BM_getppid);

// Verdict cached: read is allowed whatever its arguments.
void BM_read_devzero_1byte(benchmark::State& state) {
  const int fd = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    state.SkipWithError("open /dev/zero");
    return;
  }
  char byte = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(::read(fd, &byte, 1));
    benchmark::ClobberMemory();
  }
  ::close(fd);
}
BENCHMARK(BM_read_devzero_1byte);

// Runs the program on every call: ioctl has argument checks (TIOCSTI, TIOCLINUX) in every variant.
void BM_ioctl_FIONREAD_pipe(benchmark::State& state) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    state.SkipWithError("pipe2");
    return;
  }
  int available = 0;
  for (auto _ : state) benchmark::DoNotOptimize(::ioctl(fds[0], FIONREAD, &available));
  ::close(fds[0]);
  ::close(fds[1]);
}
BENCHMARK(BM_ioctl_FIONREAD_pipe);

// Runs the program on every call: socketpair has an argument check (family) in every variant.
// The two closes are cached; they are the same on every side.
void BM_socketpair_unix_close(benchmark::State& state) {
  for (auto _ : state) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      state.SkipWithError("socketpair");
      break;
    }
    ::close(fds[0]);
    ::close(fds[1]);
  }
}
BENCHMARK(BM_socketpair_unix_close);

// sendto: cached under the variants without inet, runs the program (MSG_FASTOPEN check) under
// the egress variants (2, 3). recvfrom is cached everywhere.
// The pair is made before the filter is loaded (install): the filters without the broker
// grant refuse unix datagram pairs.
int g_dgram_pair[2] = {-1, -1};

void BM_sendto_recv_unix_dgram(benchmark::State& state) {
  const int* fds = g_dgram_pair;
  if (fds[0] < 0) {
    state.SkipWithError("socketpair");
    return;
  }
  char byte = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(::syscall(SYS_sendto, fds[0], &byte, 1, 0, nullptr, 0));
    benchmark::DoNotOptimize(::syscall(SYS_recvfrom, fds[1], &byte, 1, 0, nullptr, nullptr));
  }
}
BENCHMARK(BM_sendto_recv_unix_dgram);

// openat runs the program on every call since the setuid/setgid rules (O_CREAT or O_TMPFILE
// with S_ISUID or S_ISGID): before them it was cached, as it still is under allow-all. The
// close is cached on every side.
void BM_openat_devnull_close(benchmark::State& state) {
  for (auto _ : state) {
    const int fd = ::openat(AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      state.SkipWithError("openat /dev/null");
      break;
    }
    ::close(fd);
  }
}
BENCHMARK(BM_openat_devnull_close);

// madvise runs the program on every call since session 19's KSM rule (MADV_MERGEABLE): the
// advice allocators give most, DONTNEED on a page they touched again, as glibc's free and
// jemalloc's purge do.
void BM_madvise_dontneed_page(benchmark::State& state) {
  void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    state.SkipWithError("mmap");
    return;
  }
  for (auto _ : state) {
    static_cast<volatile char*>(page)[0] = 1;
    benchmark::DoNotOptimize(::madvise(page, 4096, MADV_DONTNEED));
  }
  ::munmap(page, 4096);
}
BENCHMARK(BM_madvise_dontneed_page);

// The order the driver runs them in.
constexpr const char* kBenchmarks[] = {"BM_getppid",
                                       "BM_read_devzero_1byte",
                                       "BM_ioctl_FIONREAD_pipe",
                                       "BM_socketpair_unix_close",
                                       "BM_sendto_recv_unix_dgram",
                                       "BM_openat_devnull_close",
                                       "BM_madvise_dontneed_page"};

// --- Filters. ------------------------------------------------------------------------------

// A filter: "none" (-1), "allow" (kAllowAll: a one-instruction program that allows everything,
// the cost of having any filter at all), or a variant index 0..31 (the launcher's programs; 4
// and up: the module's own world, seccomp_rules.hpp), or n0..n31 (kNotify + index:
// sandbox-run's notifying programs, loaded with a listener that is never answered: the
// benchmarks make only allowed calls, which never reach it; issue 14).
constexpr int kNone = -1;
constexpr int kAllowAll = 100;
constexpr int kNotify = 1000;

int parse_filter(const std::string& text) {
  if (text == "none") return kNone;
  if (text == "allow") return kAllowAll;
  const bool notify = !text.empty() && text[0] == 'n';
  const std::string number = notify ? text.substr(1) : text;
  if (!number.empty() && number.size() <= 2 &&
      number.find_first_not_of("0123456789") == std::string::npos) {
    const int index = std::stoi(number);
    if (index < oarbank::seccomp::kVariantCount) return (notify ? kNotify : 0) + index;
  }
  std::fprintf(stderr, "syscall-bench: unknown filter %s (none, allow, 0..%d)\n", text.c_str(),
               oarbank::seccomp::kVariantCount - 1);
  std::exit(64);
}

std::string filter_label(int filter) {
  if (filter == kNone) return "none";
  if (filter == kAllowAll) return "allow-all (1 insn)";
  if (filter >= kNotify) {
    return "n" + std::to_string(filter - kNotify) + " " +
           oarbank::seccomp::variant_from_index(filter - kNotify).name() + " notify";
  }
  return "v" + std::to_string(filter) + " " + oarbank::seccomp::variant_from_index(filter).name();
}

// Same on every side: no_new_privs has no per-syscall cost, but each side should differ by the
// filter alone.
void install(int filter) {
  if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, g_dgram_pair) != 0) {
    std::perror("syscall-bench: socketpair(AF_UNIX, SOCK_DGRAM)");
    std::exit(70);
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    std::perror("syscall-bench: prctl(PR_SET_NO_NEW_PRIVS)");
    std::exit(70);
  }
  int err = 0;
  if (filter == kNone) {
    return;
  } else if (filter == kAllowAll) {
    static sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    sock_fprog program{1, allow};
    if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) err = errno;
  } else if (filter >= kNotify) {
    // The listener arrives on a pair of its own and stays queued there, unanswered.
    static int listener_pair[2] = {-1, -1};
    err = ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, listener_pair) != 0
              ? errno
              : oarbank::load_seccomp_filter(oarbank::seccomp::variant_from_index(filter - kNotify),
                                             listener_pair[0]);
  } else {
    err = oarbank::load_seccomp_filter(oarbank::seccomp::variant_from_index(filter));
  }
  if (err != 0) {
    std::fprintf(stderr, "syscall-bench: loading filter %s: %s\n", filter_label(filter).c_str(),
                 std::strerror(err));
    std::exit(70);
  }
}

// --- The driver. ---------------------------------------------------------------------------

// Records each benchmark's real and CPU time (ns per iteration) as "name\treal\tcpu\n" on a pipe.
class PipeReporter : public benchmark::BenchmarkReporter {
 public:
  explicit PipeReporter(int fd) : fd_(fd) {}
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) {
      if (run.run_type != Run::RT_Iteration) continue;
      char line[256];
      const int n =
          std::snprintf(line, sizeof line, "%s\t%.3f\t%.3f\n", run.benchmark_name().c_str(),
                        run.error_occurred ? -1.0 : run.GetAdjustedRealTime(),
                        run.error_occurred ? -1.0 : run.GetAdjustedCPUTime());
      if (n > 0 && ::write(fd_, line, static_cast<std::size_t>(n)) < 0)
        std::perror("syscall-bench: write");
    }
  }

 private:
  int fd_;
};

// A child that has loaded one filter and runs, on request, one benchmark at a time: the parent
// can then alternate between the filters every few tens of milliseconds, so the two times of a
// ratio are measured close together.
class Worker {
 public:
  explicit Worker(int filter) : filter_(filter) {
    int to_child[2];
    int from_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0) {
      std::perror("syscall-bench: pipe2");
      std::exit(1);
    }
    std::fflush(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) {
      std::perror("syscall-bench: fork");
      std::exit(1);
    }
    if (pid_ == 0) {
      ::close(to_child[1]);
      ::close(from_child[0]);
      install(filter);
      serve(to_child[0], from_child[1]);
      ::_exit(0);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    to_ = to_child[1];
    from_ = from_child[0];
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker() {
    // An empty request ends the child (it cannot wait for end of file: the children forked after
    // it hold copies of its pipe).
    if (::write(to_, "\n", 1) != 1) std::perror("syscall-bench: write");
    ::close(to_);
    ::close(from_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }

  struct Times {
    double real_ns;
    double cpu_ns;
  };

  // Runs the benchmark named exactly `name` once in the child; returns ns per iteration.
  Times run(const std::string& name) {
    const std::string request = name + "\n";
    if (::write(to_, request.data(), request.size()) != static_cast<ssize_t>(request.size()))
      fail("write");
    std::string reply;
    char c = 0;
    for (;;) {
      const ssize_t n = ::read(from_, &c, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("the child ended");
      if (c == '\n') break;
      reply += c;
    }
    const auto tab = reply.find('\t');
    Times times{-1, -1};
    if (tab != std::string::npos) {
      char* end = nullptr;
      times.real_ns = std::strtod(reply.c_str() + tab + 1, &end);
      times.cpu_ns = std::strtod(end, nullptr);
    }
    if (times.real_ns <= 0 || times.cpu_ns <= 0) fail("no time for " + name + ": " + reply);
    return times;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "syscall-bench: filter %s: %s\n", filter_label(filter_).c_str(),
                 what.c_str());
    std::exit(1);
  }

  static void serve(int in, int out) {
    PipeReporter reporter(out);
    std::string name;
    char c = 0;
    while (::read(in, &c, 1) == 1) {
      if (c != '\n') {
        name += c;
        continue;
      }
      if (name.empty()) return;
      benchmark::RunSpecifiedBenchmarks(&reporter, "^" + name + "$");
      name.clear();
    }
  }

  int filter_;
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
};

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return values[lo] * (1 - frac) + values[hi] * frac;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 40;
  int only = -2;  // -2: drive children
  int cpu = -1;
  std::vector<int> filters = {kNone, kAllowAll, 0, 2};
  bool min_time_given = false;
  std::vector<char*> bench_args = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("--rounds=")) {
      rounds = std::atoi(arg.c_str() + 9);
    } else if (arg.starts_with("--only=")) {
      only = parse_filter(arg.substr(7));
    } else if (arg.starts_with("--cpu=")) {
      cpu = std::atoi(arg.c_str() + 6);
    } else if (arg.starts_with("--filters=")) {
      filters.clear();
      std::string list = arg.substr(10);
      for (std::size_t start = 0; start <= list.size();) {
        std::size_t end = list.find(',', start);
        if (end == std::string::npos) end = list.size();
        filters.push_back(parse_filter(list.substr(start, end - start)));
        start = end + 1;
      }
    } else {
      if (arg.starts_with("--benchmark_min_time")) min_time_given = true;
      bench_args.push_back(argv[i]);
    }
  }
  static char default_min_time[] = "--benchmark_min_time=0.02";
  if (!min_time_given) bench_args.push_back(default_min_time);
  int bench_argc = static_cast<int>(bench_args.size());
  bench_args.push_back(nullptr);
  benchmark::Initialize(&bench_argc, bench_args.data());
  if (benchmark::ReportUnrecognizedArguments(bench_argc, bench_args.data())) return 64;
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (::sched_setaffinity(0, sizeof set, &set) != 0)
      std::perror("syscall-bench: sched_setaffinity");
  }

  if (only != -2) {
    std::printf("filter: %s\n", filter_label(only).c_str());
    install(only);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
  }
  if (rounds < 1 || filters.empty()) return 64;
  if (filters.front() != kNone)
    filters.insert(filters.begin(), kNone);  // the baseline is always measured

  std::vector<std::string> names;
  for (const char* name : kBenchmarks) names.push_back(name);

  // real[side][name], cpu_time[side][name]: ns per iteration, one per round
  const std::size_t n = filters.size();
  std::vector<std::unique_ptr<Worker>> workers;
  for (int filter : filters) workers.push_back(std::make_unique<Worker>(filter));
  std::vector<std::map<std::string, std::vector<double>>> real(n), cpu_time(n);
  for (int round = 0; round < rounds; ++round) {
    for (const auto& name : names) {
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t side = (static_cast<std::size_t>(round) + k) % n;
        const auto times = workers[side]->run(name);
        real[side][name].push_back(times.real_ns);
        cpu_time[side][name].push_back(times.cpu_ns);
      }
    }
    std::fprintf(stderr, "\rsyscall-bench: round %d/%d", round + 1, rounds);
  }
  std::fprintf(stderr, "\n");
  workers.clear();

  auto ratios_to_none = [](const std::vector<double>& values, const std::vector<double>& base) {
    std::vector<double> ratios;
    for (std::size_t r = 0; r < values.size() && r < base.size(); ++r)
      ratios.push_back(values[r] / base[r]);
    return ratios;
  };
  std::printf(
      "syscall-bench: %d rounds; one child per filter, filters alternating per benchmark in a "
      "rotating "
      "order; ns per iteration\n",
      rounds);
  std::printf("%-26s %-20s %8s %8s %8s  %-27s %9s  %s\n", "benchmark", "filter", "p10 ns", "median",
              "p90 ns", "ratio to none [p10, p90]", "delta ns", "CPU-time ratio");
  for (const auto& name : names) {
    for (std::size_t k = 0; k < n; ++k) {
      const auto& times = real[k][name];
      const auto ratios = ratios_to_none(times, real[0][name]);
      std::vector<double> deltas;
      for (std::size_t r = 0; r < times.size(); ++r) deltas.push_back(times[r] - real[0][name][r]);
      std::printf("%-26s %-20s %8.1f %8.1f %8.1f  %.4f [%.4f, %.4f]  %+9.1f  %.4f\n", name.c_str(),
                  filter_label(filters[k]).c_str(), quantile(times, 0.1), quantile(times, 0.5),
                  quantile(times, 0.9), quantile(ratios, 0.5), quantile(ratios, 0.1),
                  quantile(ratios, 0.9), quantile(deltas, 0.5),
                  quantile(ratios_to_none(cpu_time[k][name], cpu_time[0][name]), 0.5));
    }
  }
  benchmark::Shutdown();
  return 0;
}
