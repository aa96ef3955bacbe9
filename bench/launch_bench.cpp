// oarbank-launch-bench: what a launch through `oarbank-agent sandbox-exec` costs, as a ratio to a
// bare spawn of the same program (docs/performance.md).
//
// Each round runs every side once, in a rotating order (so no side is always first after the
// scheduler's idle time), forwards on even rounds and backwards on odd ones (so no side always
// follows the same side: a sandbox-run right after another one finds the kernel's caches
// warmer, about 40 us here, which made whichever of two such sides came second look faster), and
// times spawn-to-reap with CLOCK_MONOTONIC. The figure that counts is the median over rounds of the
// per-round ratio side/bare: both sides of a ratio ran within a few milliseconds of each other, so
// drifts of the machine (other builds, frequency, a noisy neighbour of this virtual machine) cancel
// out, which absolute times from different runs do not.
//
// Children are started with posix_spawn (clone(CLONE_VM|CLONE_VFORK) in glibc), so the driver's
// own address space is not copied and its cost is the same, and small, for every side.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

struct Side {
  std::string label;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // the driver's environment, with the side's VAR=value words
  std::vector<double> micros;    // wall time per measured round
  std::vector<double> cpu;       // user + system time of the child (and what it exec'd), per round
};

struct Sample {
  double wall_us;
  double cpu_us;
};

double now_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// Spawns argv, waits for it, returns the elapsed and CPU microseconds; exits the driver if the
// child could not be started or did not exit 0 (a benchmark of a failing launch means nothing).
Sample run_once(const Side& side, int null_fd) {
  std::vector<char*> argv;
  for (const auto& arg : side.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, null_fd, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, null_fd, STDOUT_FILENO);
  std::vector<char*> envp;
  for (const auto& entry : side.env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  pid_t pid = 0;
  const double start = now_us();
  const int err = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(),
                                side.env.empty() ? environ : envp.data());
  if (err != 0) {
    std::fprintf(stderr, "launch-bench: %s: posix_spawn %s: %s\n", side.label.c_str(), argv[0],
                 std::strerror(err));
    std::exit(1);
  }
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) {
      std::perror("launch-bench: waitpid");
      std::exit(1);
    }
  }
  const double elapsed = now_us() - start;
  posix_spawn_file_actions_destroy(&actions);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string command;
    for (const auto& arg : side.argv) command += (command.empty() ? "" : " ") + arg;
    std::fprintf(stderr, "launch-bench: %s: `%s` ended with %s %d\n", side.label.c_str(),
                 command.c_str(), WIFEXITED(status) ? "exit status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    std::exit(1);
  }
  auto us = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) * 1e6 + static_cast<double>(tv.tv_usec);
  };
  return {elapsed, us(usage.ru_utime) + us(usage.ru_stime)};
}

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return values[lo] * (1 - frac) + values[hi] * frac;
}

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

bool executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && executable(dir + "/" + name)) return dir + "/" + name;
  }
  return {};
}

[[noreturn]] void usage(int code) {
  std::fprintf(
      code == 0 ? stdout : stderr,
      "usage: oarbank-launch-bench [OPTIONS]\n"
      "  --agent PATH      oarbank-agent binary (default: the one built with this benchmark)\n"
      "  --policy FILE     policy for sandbox-exec (default: a minimal one, bundle /usr/bin)\n"
      "  --config FILE     node configuration passed to sandbox-exec with --config\n"
      "  --target PATH     program each side runs (default /bin/true)\n"
      "  --rounds N        measured rounds (default 300)\n"
      "  --warmup N        rounds run first and discarded (default 30)\n"
      "  --floor PATH | --no-floor   the floor side, `PATH TARGET` (default: oarbank-floor-exec, "
      "a\n"
      "                    static binary that sets no_new_privs and execs: any launcher's "
      "minimum)\n"
      "  --bwrap | --no-bwrap   add `bwrap --unshare-net --ro-bind / / TARGET` as a side (default: "
      "if installed)\n"
      "  --side 'LABEL=[VAR=VALUE...] CMD ARGS...'   add any command as a side (repeatable; split\n"
      "                    on spaces; leading VAR=VALUE words are its environment, no env exec)\n"
      "  --raw FILE        write every measured time (round,side,microseconds) as CSV\n");
  std::exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  std::string agent = OARBANK_AGENT_BINARY;
  std::string floor_exec = OARBANK_FLOOR_BINARY;
  std::string policy;
  std::string config;
  std::string target = "/bin/true";
  std::string raw_path;
  long rounds = 300;
  long warmup = 30;
  int bwrap = -1;  // -1: if installed
  std::vector<std::string> extra_sides;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(64);
      return argv[++i];
    };
    if (arg == "--agent")
      agent = value();
    else if (arg == "--policy")
      policy = value();
    else if (arg == "--config")
      config = value();
    else if (arg == "--target")
      target = value();
    else if (arg == "--rounds")
      rounds = std::strtol(value().c_str(), nullptr, 10);
    else if (arg == "--warmup")
      warmup = std::strtol(value().c_str(), nullptr, 10);
    else if (arg == "--floor")
      floor_exec = value();
    else if (arg == "--no-floor")
      floor_exec.clear();
    else if (arg == "--bwrap")
      bwrap = 1;
    else if (arg == "--no-bwrap")
      bwrap = 0;
    else if (arg == "--side")
      extra_sides.push_back(value());
    else if (arg == "--raw")
      raw_path = value();
    else if (arg == "-h" || arg == "--help")
      usage(0);
    else
      usage(64);
  }
  if (rounds < 1 || warmup < 0) usage(64);

  std::string temp_policy;
  if (policy.empty()) {
    char name[] = "/tmp/oarbank-launch-bench-XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd < 0) {
      std::perror("launch-bench: mkstemp");
      return 1;
    }
    const std::string text = R"({"bundle": "/usr/bin", "ipc_isolation": "best-effort"})";
    if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      std::perror("launch-bench: write policy");
      return 1;
    }
    ::fchmod(fd, 0644);
    ::close(fd);
    policy = temp_policy = name;
  }

  std::vector<Side> sides;
  sides.push_back({"bare", {target}, {}, {}, {}});
  Side sandbox{"sandbox-exec", {agent, "sandbox-exec"}, {}, {}, {}};
  if (!config.empty()) {
    sandbox.argv.push_back("--config");
    sandbox.argv.push_back(config);
  }
  sandbox.argv.insert(sandbox.argv.end(), {policy, "--", target});
  sides.push_back(sandbox);
  if (!floor_exec.empty()) sides.push_back({"floor", {floor_exec, target}, {}, {}, {}});
  const std::string bwrap_path = bwrap == 0 ? std::string() : find_in_path("bwrap");
  if (bwrap == 1 && bwrap_path.empty()) {
    std::fprintf(stderr, "launch-bench: --bwrap: bwrap is not installed\n");
    return 1;
  }
  // --unshare-net: bubblewrap's own network isolation, the nearest to what our policy enforces.
  if (!bwrap_path.empty()) {
    sides.push_back(
        {"bwrap", {bwrap_path, "--unshare-net", "--ro-bind", "/", "/", target}, {}, {}, {}});
  }
  for (const auto& spec : extra_sides) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) usage(64);
    auto words = split_words(spec.substr(eq + 1));
    // Leading VAR=value words set the side's environment (as env(1) would, without its exec).
    std::vector<std::string> env;
    while (!words.empty() && words[0].find('=') != std::string::npos &&
           words[0].find('/') > words[0].find('=')) {
      if (env.empty()) {
        for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
      }
      const std::string name = words[0].substr(0, words[0].find('=') + 1);
      std::erase_if(env, [&](const std::string& entry) { return entry.starts_with(name); });
      env.push_back(words[0]);
      words.erase(words.begin());
    }
    if (words.empty()) usage(64);
    if (words[0].find('/') == std::string::npos) words[0] = find_in_path(words[0]);
    sides.push_back({spec.substr(0, eq), words, env, {}, {}});
  }

  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0) {
    std::perror("launch-bench: /dev/null");
    return 1;
  }
  const std::size_t n = sides.size();
  for (long round = 0; round < warmup + rounds; ++round) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t step = round % 2 == 0 ? k : n - 1 - k;
      Side& side = sides[(static_cast<std::size_t>(round) + step) % n];
      const Sample sample = run_once(side, null_fd);
      if (round >= warmup) {
        side.micros.push_back(sample.wall_us);
        side.cpu.push_back(sample.cpu_us);
      }
    }
  }
  if (!temp_policy.empty()) ::unlink(temp_policy.c_str());

  std::printf(
      "launch-bench: %ld rounds (after %ld warm-up), sides in rotating order, alternately "
      "reversed, target %s\n",
      rounds, warmup, target.c_str());
  auto ratios_to_bare = [&](const std::vector<double> Side::*field, std::size_t k) {
    std::vector<double> ratios;
    const auto& values = sides[k].*field;
    const auto& base = sides[0].*field;
    for (std::size_t r = 0; r < values.size(); ++r) ratios.push_back(values[r] / base[r]);
    return ratios;
  };
  std::printf("wall time, spawn to reap:\n");
  std::printf("%-16s %9s %9s %9s   %s\n", "side", "p10 us", "median us", "p90 us",
              "ratio to bare: median [p10, p90]");
  for (std::size_t k = 0; k < n; ++k) {
    const auto ratios = ratios_to_bare(&Side::micros, k);
    std::printf("%-16s %9.0f %9.0f %9.0f   %.3f [%.3f, %.3f]\n", sides[k].label.c_str(),
                quantile(sides[k].micros, 0.1), quantile(sides[k].micros, 0.5),
                quantile(sides[k].micros, 0.9), quantile(ratios, 0.5), quantile(ratios, 0.1),
                quantile(ratios, 0.9));
  }
  std::printf(
      "CPU time of the child (user + system; less exposed to other load than wall time):\n");
  for (std::size_t k = 0; k < n; ++k) {
    const auto ratios = ratios_to_bare(&Side::cpu, k);
    std::printf("%-16s %9.0f %9.0f %9.0f   %.3f [%.3f, %.3f]\n", sides[k].label.c_str(),
                quantile(sides[k].cpu, 0.1), quantile(sides[k].cpu, 0.5),
                quantile(sides[k].cpu, 0.9), quantile(ratios, 0.5), quantile(ratios, 0.1),
                quantile(ratios, 0.9));
  }
  // sandbox-exec against the floor, per round: what the launcher costs beyond the one exec any
  // launcher needs (the floor's own ratio to bare depends on the machine: 1.15 to 1.7 seen).
  if (!floor_exec.empty()) {
    std::vector<double> over_floor;
    std::vector<double> excess;
    for (std::size_t r = 0; r < sides[1].micros.size(); ++r) {
      over_floor.push_back(sides[1].micros[r] / sides[2].micros[r]);
      excess.push_back((sides[1].micros[r] - sides[2].micros[r]) / sides[0].micros[r]);
    }
    std::printf(
        "sandbox-exec / floor: median %.3f [%.3f, %.3f]; (sandbox-exec - floor) / bare: median "
        "%.3f\n",
        quantile(over_floor, 0.5), quantile(over_floor, 0.1), quantile(over_floor, 0.9),
        quantile(excess, 0.5));
  }
  // Every other side against sandbox-exec, per round, in units of bare: e.g. what sandbox-run
  // adds (issue 11's target: at most 0.5).
  for (std::size_t k = 2; k < n; ++k) {
    if (sides[k].label == "floor" || sides[k].label == "bwrap") continue;
    std::vector<double> added;
    for (std::size_t r = 0; r < sides[k].micros.size(); ++r) {
      added.push_back((sides[k].micros[r] - sides[1].micros[r]) / sides[0].micros[r]);
    }
    std::printf("(%s - sandbox-exec) / bare: median %.3f [%.3f, %.3f]\n", sides[k].label.c_str(),
                quantile(added, 0.5), quantile(added, 0.1), quantile(added, 0.9));
  }
  for (std::size_t k = 1; k < n; ++k) {
    std::printf("RATIO %s wall %.3f cpu %.3f\n", sides[k].label.c_str(),
                quantile(ratios_to_bare(&Side::micros, k), 0.5),
                quantile(ratios_to_bare(&Side::cpu, k), 0.5));
  }
  if (!raw_path.empty()) {
    std::ofstream raw(raw_path);
    raw << "round,side,wall_us,cpu_us\n";
    for (const auto& side : sides) {
      for (std::size_t r = 0; r < side.micros.size(); ++r) {
        raw << r << ',' << side.label << ',' << side.micros[r] << ',' << side.cpu[r] << '\n';
      }
    }
  }
  return 0;
}
