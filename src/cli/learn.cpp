#include "cli/learn.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "apply/policy_file.hpp"
#include "cli/commands.hpp"
#include "config/node_config.hpp"
#include "oarbank/policy.hpp"
#include "plan/denials.hpp"
#include "plan/protected_paths.hpp"
#include "supervise/module_run.hpp"
#include "supervise/run_state.hpp"
#include "supervise/uid_registry.hpp"
#include "sys/error.hpp"
#include "sys/text_file.hpp"
#include "sys/unique_fd.hpp"

extern char** environ;

namespace oarbank::cli {
namespace {

constexpr const char* kCommand = "sandbox-run";

std::string read_policy_text(const std::string& path) {
  if (path == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  return read_text_file(path);
}

void write_text(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid() ||
      ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    throw Error(ErrorKind::StepFailed,
                "step learn failed: write " + path + ": " + errno_text(errno));
  }
}

// Session 21's real-programs review: a stop asked of --learn (SIGINT, SIGTERM, SIGHUP,
// SIGQUIT) went to it alone: it died, and its trial's sandbox-run ran the module on,
// unobserved, with the proposal's files left in /tmp. Now the signals (and SIGCHLD) are held
// while the trials run: one that arrives is passed to the trial, whose sandbox-run stops its
// module as any does, and --learn ends once the trial has. A --learn killed outright
// (SIGKILL) has its trial sent SIGTERM by the kernel (PR_SET_PDEATHSIG).
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

class HeldSignals {
 public:
  HeldSignals() {
    // An ignored SIGCHLD (kept across exec from the caller) reaps the trial at once: no SIGCHLD,
    // waitpid ECHILD, and the wait below never ended (session 21's diff review).
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    ::sigaction(SIGCHLD, &default_action, nullptr);
    sigemptyset(&held_);
    sigaddset(&held_, SIGCHLD);
    for (int sig : kStopSignals) sigaddset(&held_, sig);
    ::sigprocmask(SIG_BLOCK, &held_, &before_);
  }
  ~HeldSignals() { ::sigprocmask(SIG_SETMASK, &before_, nullptr); }
  HeldSignals(const HeldSignals&) = delete;
  HeldSignals& operator=(const HeldSignals&) = delete;

  // A stop signal already waiting (sent between two trials), else 0. SIGCHLD is left.
  [[nodiscard]] int pending_stop() const {
    sigset_t stops;
    sigemptyset(&stops);
    for (int sig : kStopSignals) sigaddset(&stops, sig);
    const timespec now{};
    const int sig = ::sigtimedwait(&stops, nullptr, &now);
    return sig > 0 ? sig : 0;
  }
  // The next held signal, and how it was sent (siginfo_t::si_code).
  [[nodiscard]] int next(int* code) const {
    for (;;) {
      siginfo_t info{};
      const int sig = ::sigwaitinfo(&held_, &info);
      if (sig > 0) {
        *code = info.si_code;
        return sig;
      }
    }
  }
  [[nodiscard]] const sigset_t& before() const { return before_; }

 private:
  sigset_t held_{};
  sigset_t before_{};
};

// Whether --learn's group has the foreground of the operator's terminal (the first of 0, 1,
// 2 that is one).
bool has_terminal_foreground() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::isatty(fd) == 1) return ::tcgetpgrp(fd) == ::getpgrp();
  }
  return false;
}

struct TrialEnd {
  int code = 0;         // as a shell shows it
  int stop_signal = 0;  // the first stop signal --learn was sent while it ran, else 0
};

// One trial: this binary's sandbox-run with the proposed policy. `on_terminal`: --learn has
// the terminal's foreground (has_terminal_foreground).
TrialEnd run_trial(const std::vector<std::string>& argv, const HeldSignals& signals,
                   bool on_terminal) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(ErrorKind::StepFailed, "step learn failed: fork: " + errno_text(errno));
  if (pid == 0) {
    // Off a terminal, a process group of its own (session 21's diff review): a stop sent to
    // --learn's whole group (kill -- -PGID) reached the trial twice, once from --learn, and
    // its sandbox-run took the second as "kill at once". On a terminal it stays in --learn's
    // group: its sandbox-run relays the terminal (^C and ^Z are bytes for the module's own
    // terminal) and stops itself when the module stops, for the shell to see the job stop
    // (the second diff review: in a group of its own, ^Z hung the shell).
    if (!on_terminal) ::setpgid(0, 0);
    ::sigprocmask(SIG_SETMASK, &signals.before(), nullptr);
    // SIGTERM where --learn is gone: then its trial stops its module too (checked after the
    // prctl: --learn may have ended before it).
    if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || ::getppid() != parent) ::_exit(71);
    ::execve("/proc/self/exe", args.data(), environ);
    ::_exit(71);
  }
  if (!on_terminal) ::setpgid(pid, pid);  // either side first: no moment in --learn's group
  TrialEnd end;
  for (;;) {
    int code = 0;
    const int sig = signals.next(&code);
    if (sig == SIGCHLD) {
      int status = 0;
      pid_t reaped = 0;
      while ((reaped = ::waitpid(pid, &status, WNOHANG | WUNTRACED)) < 0 && errno == EINTR) {
      }
      // On a terminal the trial's sandbox-run stops itself when its module is stopped (^Z),
      // for its parent, a shell, to see the job stop: --learn is that parent, so it stops
      // itself too, and the shell's fg continues both (one group). Before (the second diff
      // review), ^Z left the shell waiting for ever.
      if (reaped == pid && WIFSTOPPED(status)) {
        if (on_terminal) ::kill(::getpid(), SIGSTOP);
        continue;
      }
      if (reaped < 0 && errno == ECHILD) {  // reaped by another (it has ended)
        end.code = exit_code_for(ErrorKind::StepFailed);
        return end;
      }
      if (reaped != pid) continue;
      end.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return end;
    }
    if (end.stop_signal == 0) end.stop_signal = sig;
    // On a terminal the trial is in --learn's group: the terminal's own signal (^C, sent by
    // the kernel) reached it too, and a second would be its sandbox-run's "kill at once".
    if (!(on_terminal && code == SI_KERNEL)) ::kill(pid, sig);
  }
}

// What a --learn killed outright (SIGKILL) left: /tmp/oarbank-learn-PID-* of this user whose
// PID is gone, holding at most the trial's policy and result. Removed at the next --learn.
void remove_dead_learn_dirs() {
  const UniqueFd tmp(::open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!tmp.valid()) return;
  DIR* listing = ::fdopendir(::dup(tmp.get()));
  if (listing == nullptr) return;
  std::vector<std::string> dead;
  constexpr std::string_view kPrefix = "oarbank-learn-";
  while (const dirent* entry = ::readdir(listing)) {
    const std::string_view name = entry->d_name;
    if (!name.starts_with(kPrefix)) continue;
    const std::string_view rest = name.substr(kPrefix.size());
    const std::size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string_view::npos) continue;
    const std::string digits(rest.substr(0, dash));
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
    const pid_t owner = static_cast<pid_t>(std::stol(digits));
    if (::kill(owner, 0) == 0 || errno != ESRCH) continue;
    struct stat st {};
    if (::fstatat(tmp.get(), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
      continue;
    }
    dead.emplace_back(name);
  }
  ::closedir(listing);
  for (const auto& name : dead) {
    const UniqueFd dir(
        ::openat(tmp.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir.valid()) continue;
    ::unlinkat(dir.get(), "policy.json", 0);
    ::unlinkat(dir.get(), "result.json", 0);
    ::unlinkat(tmp.get(), name.c_str(), AT_REMOVEDIR);
  }
}

// sandbox-run's own files (module_run.cpp's claim_record refuses a policy that reaches them).
std::vector<NamedPath> own_files(const RunArgs& options) {
  std::vector<NamedPath> protect;
  try {
    protect.push_back({"the run state directory", path_forms(run_state_dir())});
  } catch (const Error&) {
    // No state directory for this user: the trial itself will say so.
  }
  std::string config = kDefaultConfigPath;
  if (options.exec.config_path) {
    config = *options.exec.config_path;
  } else if (const char* env = std::getenv(kConfigEnvVar); env != nullptr && *env != '\0') {
    config = env;
  }
  if (!config.empty() && config[0] != '/') {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd) != nullptr) config = std::string(cwd) + "/" + config;
  }
  protect.push_back({"the node configuration", path_forms(config)});
  protect.push_back({"the module user registry", path_forms(user_registry_dir())});
  return protect;
}

// Attack review: a grant names what a hostile module chose to be refused. It joins the
// proposal only when the proposal stays a policy the normal parser accepts (no "/", no "..",
// nothing relative) and reaches none of sandbox-run's own files; otherwise one line says what
// was left out and why, and the proposal is as before.
std::string checked_grant(nlohmann::json& proposed, const nlohmann::json& grant,
                          const std::vector<NamedPath>& protect) {
  nlohmann::json candidate = proposed;
  std::string change = apply_grant(candidate, grant);
  if (change.empty()) return "";
  std::string problem;
  try {
    const Policy policy = parse_policy(candidate.dump());
    std::vector<NamedPath> named = policy_paths(policy);
    for (auto& path : named) path.forms = path_forms(path.forms.front());
    if (auto overlap = protected_path_problem(named, protect)) problem = *overlap;
  } catch (const PolicyError& e) {
    problem = std::string("the policy would be invalid: ") + e.what();
  }
  if (!problem.empty()) {
    print_error(kCommand, "--learn: not proposed: " + change + ": " + problem);
    return "";
  }
  proposed = std::move(candidate);
  return change;
}

// The path a grant names ({"key": "data", "add": "/srv/x"}), else "".
std::string grant_path(const nlohmann::json& grant) {
  for (const char* field : {"add", "set"}) {
    if (grant.contains(field) && grant[field].is_string()) return grant[field].get<std::string>();
  }
  return "";
}

// Attack review (session 15): each trial ran with what the module's refusals proposed, so a
// hostile module was refused a read of a file and a connection to its own host in one trial,
// and in the next read the file and sent it there. Destinations the trials proposed are in
// the proposal printed, for the operator to judge, but no trial runs with them: a trial
// reaches only the destinations the given policy names. (Paths stay: what is read cannot
// leave without one.)
nlohmann::json trial_policy(const nlohmann::json& proposed, const nlohmann::json& given) {
  nlohmann::json trial = proposed;
  if (trial.contains("egress")) {
    if (given.contains("egress")) {
      trial["egress"] = given["egress"];
    } else {
      trial.erase("egress");
    }
  }
  return trial;
}

}  // namespace

int run_learn(const RunArgs& options) {
  const int rounds = *options.learn;
  if (rounds < 1 || rounds > 100) throw Error(ErrorKind::Usage, "--learn: expected 1 to 100 runs");
  if (options.result_path) {
    throw Error(ErrorKind::Usage, "--learn and --result: each trial's result is its own");
  }
  const nlohmann::json given =
      nlohmann::json::parse(read_policy_text(options.exec.policy_path), nullptr, false);
  if (!given.is_object()) {
    throw Error(ErrorKind::Usage, options.exec.policy_path + ": not a JSON object (the policy)");
  }
  remove_dead_learn_dirs();
  std::string dir_template = "/tmp/oarbank-learn-" + std::to_string(::getpid()) + "-XXXXXX";
  if (::mkdtemp(dir_template.data()) == nullptr) {
    throw Error(ErrorKind::StepFailed, "step learn failed: mkdtemp: " + errno_text(errno));
  }
  const std::string dir = dir_template;
  const std::string policy_file = dir + "/policy.json", result_file = dir + "/result.json";
  nlohmann::json proposed = given;
  const std::vector<NamedPath> protect = own_files(options);
  // The last proposal a trial started with, and the changes made since (undone when the next
  // trial does not start: the proposal printed is always one the node ran).
  nlohmann::json started = given;
  std::size_t started_changes = 0;
  std::vector<std::string> changes;
  std::vector<nlohmann::json> tried;  // the grants of the changes since `started`
  std::set<std::string> refused;      // grants a trial did not start with: never again
  // A round that added only conditional grants (a refusal the program carries on without,
  // blamed because nothing else was): how that trial ended and the proposal before it. When
  // the next trial ends the same way and shows nothing new, the grant did not help and is
  // taken back (session 16's review: the broker was proposed for a program that merely
  // looked its user up on the way to failing for another reason).
  struct ConditionalRound {
    std::string end;
    int exit_code = -1;
    nlohmann::json before;
    std::size_t changes_before = 0;
  };
  std::optional<ConditionalRound> conditional_round;
  int code = 0, runs = 0, stopped_by = 0;
  const HeldSignals signals;
  const bool on_terminal = has_terminal_foreground();
  // A stop (signal `sig`) ends the trials: `what` says when. `cut_short`: it ended a trial,
  // whose changes are then not proposed (a run cut short proves nothing).
  const auto stop_here = [&](int sig, const std::string& what, bool cut_short) {
    stopped_by = sig;
    if (cut_short) {
      proposed = started;
      changes.resize(started_changes);
    }
    print_error(kCommand, "--learn: " + what + "; the proposal so far follows");
  };
  const auto name = [](int sig) { return std::string("SIG") + sigabbrev_np(sig); };
  try {
    for (int round = 1; round <= rounds; ++round) {
      if (const int sig = signals.pending_stop(); sig != 0) {
        stop_here(sig, "stopped by " + name(sig) + " before run " + std::to_string(round), false);
        break;
      }
      write_text(policy_file, trial_policy(proposed, given).dump(2) + "\n");
      ::unlink(result_file.c_str());
      std::vector<std::string> argv{"oarbank-agent", "sandbox-run", "--result", result_file};
      if (options.exec.config_path)
        argv.insert(argv.end(), {"--config", *options.exec.config_path});
      // Every trial under the module's own id: its uid (module_users), and so the owner of
      // the directories a trial makes, is the one the next trial and the real run check.
      if (options.id) argv.insert(argv.end(), {"--id", *options.id});
      if (options.timeout) argv.insert(argv.end(), {"--timeout", std::to_string(*options.timeout)});
      argv.insert(argv.end(), {"--kill-after", std::to_string(options.kill_after)});
      if (options.proxy_log) argv.insert(argv.end(), {"--proxy-log", *options.proxy_log});
      for (const auto& entry : options.exec.setenv) argv.insert(argv.end(), {"--setenv", entry});
      for (int fd : options.exec.keep_fds)
        argv.insert(argv.end(), {"--keep-fd", std::to_string(fd)});
      argv.insert(argv.end(), {policy_file, "--"});
      argv.insert(argv.end(), options.exec.argv.begin(), options.exec.argv.end());
      const TrialEnd trial = run_trial(argv, signals, on_terminal);
      code = trial.code;
      ++runs;
      if (trial.stop_signal != 0) {
        // Its refusals are those of a run cut short: none is proposed.
        stop_here(trial.stop_signal,
                  "stopped by " + name(trial.stop_signal) + " during run " + std::to_string(round) +
                      " (its module stopped with it)",
                  true);
        break;
      }
      const auto result = nlohmann::json::parse(read_text_file(result_file), nullptr, false);
      // Stopped by a signal sent to the trial itself, or, on a terminal, ended by ^C (a byte
      // the trial's sandbox-run relays to the module's own terminal, which sends the module
      // SIGINT): --learn ends as if it had been sent it (the second diff review: the next
      // trial ran).
      const bool stop_asked = result.is_object() && result.contains("stop_signal") &&
                              result["stop_signal"].is_number_integer();
      const bool interrupted = on_terminal && result.is_object() &&
                               result.value("module_signal", nlohmann::json()) == SIGINT;
      if (stop_asked || interrupted) {
        const int sig = stop_asked ? result["stop_signal"].get<int>() : SIGINT;
        stop_here(sig, "run " + std::to_string(round) + " was stopped by " + name(sig), true);
        break;
      }
      if (!result.is_object() || result.value("end", "") == "not-started") {
        // Session 21's real-programs review: every change was dropped, an egress destination
        // too (no trial runs with one, so none can keep a trial from starting), and those the
        // refusal did not name. Now the changes whose path the refusal names are dropped and
        // the next run tries the others; where it names none, the paths are dropped and the
        // egress destinations kept.
        const std::string error = result.is_object() ? result.value("error", "") : "";
        std::vector<nlohmann::json> named, others;
        for (const auto& grant : tried) {
          const std::string path = grant_path(grant);
          const bool is_named = grant.value("key", "") != "egress" && line_names_path(error, path);
          (is_named ? named : others).push_back(grant);
        }
        const bool paths_left = std::any_of(others.begin(), others.end(), [](const auto& g) {
          return g.value("key", "") != "egress";
        });
        const bool retry = !named.empty() && paths_left && round < rounds;
        const std::size_t undone = changes.size() - started_changes;
        proposed = started;
        changes.resize(started_changes);
        tried.clear();
        std::size_t kept_egress = 0;
        for (const auto& grant : others) {
          const bool egress = grant.value("key", "") == "egress";
          if (!retry && !egress) continue;
          const std::string change = checked_grant(proposed, grant, protect);
          if (change.empty()) continue;
          changes.push_back(change);
          tried.push_back(grant);
          if (egress) ++kept_egress;
        }
        for (const auto& grant : named) refused.insert(grant.dump());
        if (retry) {
          std::string dropped;
          for (const auto& grant : named) dropped += (dropped.empty() ? "" : ", ") + grant.dump();
          print_error(kCommand, "--learn: run " + std::to_string(round) +
                                    " did not start, for the change(s) its refusal names (" +
                                    dropped + "): not proposed; run " + std::to_string(round + 1) +
                                    " tries the others");
          continue;
        }
        const std::size_t dropped = undone - kept_egress;
        print_error(kCommand,
                    "--learn: run " + std::to_string(round) + " did not start" +
                        (dropped > 0 ? "; the " + std::to_string(dropped) +
                                           " change(s) it tried are not proposed"
                                     : std::string()) +
                        (kept_egress > 0 ? "; the " + std::to_string(kept_egress) +
                                               " egress destination(s) proposed beside them "
                                               "are kept (no trial runs with one)"
                                         : std::string()) +
                        "; the proposal so far follows");
        break;
      }
      started = proposed;
      started_changes = changes.size();
      tried.clear();
      std::size_t added = 0;
      const bool worked = result.value("end", "") == "exited" && result.value("exit_code", -1) == 0;
      const auto denials = result.value("denials", nlohmann::json::array());
      const auto conditional = [](const nlohmann::json& grant) {
        return grant.is_object() && grant.value("only_if_the_run_failed", false);
      };
      const std::string end = result.value("end", "");
      const int exit_code = result.value("exit_code", -1);
      bool conditional_only = false;
      // Two passes: what the refusals need first; then a refusal the program carries on
      // without (nscd's socket) only when the trial failed and nothing else was added, so
      // that it is the one left to blame (session 15's second review: a first trial failed
      // for a missing runtime path, and the broker was proposed with it).
      for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1 && (worked || added > 0)) break;
        for (const auto& denial : denials) {
          const nlohmann::json grant = denial.value("grant", nlohmann::json());
          if (conditional(grant) != (pass == 1) || refused.contains(grant.dump())) continue;
          const std::string change = checked_grant(proposed, grant, protect);
          if (!change.empty()) {
            changes.push_back(change);
            tried.push_back(grant);
            ++added;
            conditional_only = pass == 1;
          }
        }
      }
      if (conditional_round && !worked && added == 0 && end == conditional_round->end &&
          exit_code == conditional_round->exit_code) {
        proposed = conditional_round->before;
        changes.resize(conditional_round->changes_before);
        started = proposed;
        started_changes = changes.size();
        tried.clear();
        break;
      }
      conditional_round.reset();
      if (conditional_only) {
        // `started` is still the proposal this round began with (set above, before its grants).
        conditional_round = ConditionalRound{end, exit_code, started, started_changes};
      }
      if (added == 0) break;  // nothing more a policy can grant
    }
  } catch (...) {
    ::unlink(policy_file.c_str());
    ::unlink(result_file.c_str());
    ::rmdir(dir.c_str());
    throw;
  }
  ::unlink(policy_file.c_str());
  ::unlink(result_file.c_str());
  ::rmdir(dir.c_str());
  std::string out = "sandbox-run --learn: " + std::to_string(runs) + " run(s); " +
                    (changes.empty() ? std::string("no change to propose")
                                     : std::to_string(changes.size()) + " change(s) to " +
                                           options.exec.policy_path + ":") +
                    "\n";
  // ASCII only (what a module's refusals name may hold C1 control characters, U+0080-U+009F,
  // that a terminal acts on): the same JSON, other characters as \uXXXX.
  for (const auto& change : changes) out += change + "\n";
  out += proposed.dump(2, ' ', true) + "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  // A stop sent after the last trial: held until now; taken, so that unblocking it does not
  // end --learn before its exit code (SIGQUIT would dump core).
  while (const int late = signals.pending_stop()) {
    if (stopped_by == 0) stopped_by = late;
  }
  return stopped_by != 0 ? 128 + stopped_by : code;
}

}  // namespace oarbank::cli
