#include "apply/launch.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>

#include "apply/descriptors.hpp"
#include "apply/exec_failure.hpp"
#include "apply/identity.hpp"
#include "apply/landlock_apply.hpp"
#include "apply/launch_hooks.hpp"
#include "apply/seccomp_apply.hpp"
#include "plan/launch_steps.hpp"
#include "plan/status_line.hpp"
#include "probe/writable_path_rule.hpp"
#include "sys/error.hpp"
#include "sys/landlock_abi.hpp"

namespace oarbank {

std::string resolve_executable(const std::string& name, const std::string& path_list) {
  if (name.find('/') != std::string::npos) return name;
  std::string not_executable;
  std::size_t start = 0;
  while (start <= path_list.size()) {
    std::size_t end = path_list.find(':', start);
    if (end == std::string::npos) end = path_list.size();
    std::string dir = path_list.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    // A file that is there but not executable is what execvp would have tried (and failed
    // with EACCES): the module's author then hears of the execute bit, not of a missing file.
    if (not_executable.empty() && ::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      not_executable = candidate;
    }
    start = end + 1;
  }
  if (!not_executable.empty()) return not_executable;
  return name;  // execve will answer ENOENT, reported as an exec failure
}

PreparedLaunch prepare_launch(const Plan& plan, const Policy& policy, const OpenedPaths& paths) {
  PreparedLaunch prepared;
  prepared.ruleset = build_landlock_ruleset(plan.landlock, paths);
  // The plan always sets PATH (module_environment); the executable is found on the module's.
  std::string module_path;
  for (const auto& entry : plan.environment) {
    if (entry.starts_with("PATH=")) module_path = entry.substr(5);
  }
  prepared.executable = resolve_executable(plan.argv.at(0), module_path);
  prepared.looked_up_on_path =
      prepared.executable == plan.argv.at(0) && plan.argv.at(0).find('/') == std::string::npos;
  prepared.module_path = module_path;
  // execve takes char* const[] but does not write through it; the plan outlives the launch.
  for (const auto& arg : plan.argv) prepared.argv.push_back(const_cast<char*>(arg.c_str()));
  prepared.argv.push_back(nullptr);
  for (const auto& env : plan.environment) prepared.envp.push_back(const_cast<char*>(env.c_str()));
  prepared.envp.push_back(nullptr);
  // The module starts in its work directory, like systemd's WorkingDirectory=.
  prepared.working_directory = policy.work   ? *policy.work
                               : policy.temp ? *policy.temp
                                             : policy.bundle;
  prepared.working_directory_fd = paths.fd(prepared.working_directory);
  for (const auto& dir : plan.writable_dirs)
    prepared.writable_dir_fds.push_back(paths.fd(dir.path));
  return prepared;
}

namespace {

int g_status_fd = -1;

}  // namespace

void set_launch_status_fd(int fd) {
  g_status_fd = fd;
  if (fd >= 0) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
}

void report_launch_status(int code, const std::string& line) {
  if (g_status_fd < 0) return;
  const std::string text = status_failure_line(code, line);
  [[maybe_unused]] auto n = ::write(g_status_fd, text.data(), text.size());
}

namespace {

// What the launcher's steps work on. A step returns false and fills `error` (no throwing
// here: from the identity step on the process is half-sandboxed).
struct LaunchState {
  const Plan& plan;
  PreparedLaunch& prepared;
  StepError error;
};

bool launch_failed(LaunchState& state, std::string what, int err) {
  state.error = StepError{std::move(what), err};
  return false;
}

bool step_descriptors(LaunchState& state) {
  // An inherited terminal stays the launcher's controlling terminal, in its process group: a
  // background module that reads it is stopped by job control (SIGTTIN) like any background
  // job. Giving it up (TIOCNOTTY) would lift those checks. What a module could do to the
  // terminal is refused by the filter: TIOCSTI, TIOCLINUX, TIOCSPGRP, TIOCSETD, TIOCCONS, and
  // setsid and setpgid.
  // The status channel must close at the module's exec: a module that kept it could forge the
  // launcher's report.
  for (int fd : state.plan.keep_fds) {
    if (fd == g_status_fd) {
      return launch_failed(state, "--keep-fd " + std::to_string(fd) + " is the status channel",
                           EBADF);
    }
  }
  return close_on_exec_except(state.plan.keep_fds, state.error);
}

// Under sandbox-run (a supervisor that receives the filter's listener, or reads Landlock's audit
// log) the real uid is set last: after the listener's send, and after landlock_restrict_self,
// whose domain the audit log names by the real uid of its maker (identity.hpp).
bool real_uid_set_last(const Plan& plan) {
  return plan.seccomp_notify || plan.landlock_log_new_exec;
}

bool step_identity(LaunchState& state) {
  const Plan& plan = state.plan;
  const PreparedLaunch& prepared = state.prepared;
  if (!launch_test_skips(LaunchStep::Identity) &&
      !apply_identity(plan.identity, state.error, real_uid_set_last(plan))) {
    return false;
  }
  // The module user must be able to use its writable paths (docs/launcher.md, "The steps, in
  // order", Identity: a directory the module user cannot use is refused with 70, named): work
  // and temp read, write and search, data read and search only (probe/writable_path_rule.hpp;
  // read-only input is fine). Asked of the descriptor the directory rule was checked on
  // (faccessat2 AT_EMPTY_PATH, Linux 5.8); by name where the call is refused (EINVAL from
  // glibc's emulation, or ENOSYS). Part of this step, not one of its own: its messages have
  // always said "step identity failed".
  for (std::size_t i = 0; i < plan.writable_dirs.size(); ++i) {
    const std::string& dir = plan.writable_dirs[i].path;
    const std::string& role = plan.writable_dirs[i].role;
    const int fd = i < prepared.writable_dir_fds.size() ? prepared.writable_dir_fds[i] : -1;
    struct stat st {};
    if (fd >= 0 ? ::fstat(fd, &st) != 0 : ::stat(dir.c_str(), &st) != 0) {
      const int err = errno;  // before the message is built
      return launch_failed(state, "stat " + dir, err);
    }
    // An entry without a role (a plan from elsewhere) is asked for everything, as before.
    const int mode =
        role.empty() ? (R_OK | W_OK | X_OK) : writable_access_mode(role, S_ISDIR(st.st_mode));
    int rc = fd >= 0 ? ::faccessat(fd, "", mode, AT_EACCESS | AT_EMPTY_PATH) : -1;
    if (fd < 0 || (rc != 0 && (errno == EINVAL || errno == ENOSYS))) {
      rc = ::faccessat(AT_FDCWD, dir.c_str(), mode, AT_EACCESS);
    }
    if (rc != 0) {
      const int err = errno;
      // The problem names the errno, the path and the fix itself.
      state.error =
          StepError{writable_access_problem(role.empty() ? "writable" : role, dir,
                                            PathOwnership{st.st_uid, st.st_mode}, ::geteuid(), err),
                    err, true};
      return false;
    }
  }
  if (prepared.working_directory_fd >= 0 ? ::fchdir(prepared.working_directory_fd) != 0
                                         : ::chdir(prepared.working_directory.c_str()) != 0) {
    const int err = errno;
    return launch_failed(state, "chdir(" + prepared.working_directory + ")", err);
  }
  return true;
}

bool step_no_new_privs(LaunchState& state) {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    const int err = errno;
    return launch_failed(state, "prctl(PR_SET_NO_NEW_PRIVS)", err);
  }
  return true;
}

bool step_landlock(LaunchState& state) {
  // Under sandbox-run on ABI 7 (Linux 6.15), Landlock keeps logging the module's denials after
  // its exec (docs/denials.md); the flag is 0 elsewhere.
  const unsigned log_flags =
      state.plan.landlock_log_new_exec ? LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON : 0;
  if (int err = restrict_self(state.prepared.ruleset, log_flags); err != 0) {
    return launch_failed(state, "landlock_restrict_self", err);
  }
  state.prepared.ruleset.reset();
  return true;
}

// Under sandbox-run the real uid becomes the module's after the listener's send and Landlock's
// restrict_self (identity.hpp), whether or not a test skips the filter.
bool finish_identity_after_send(LaunchState& state) {
  return !real_uid_set_last(state.plan) || launch_test_skips(LaunchStep::Identity) ||
         finish_identity(state.plan.identity, state.error);
}

bool step_seccomp(LaunchState& state) {
  if (launch_test_skips(LaunchStep::Seccomp)) return finish_identity_after_send(state);
  // Under sandbox-run the notifying program's listener goes to the supervisor over the status
  // channel (a socket pair there); -1: the errno program, no listener.
  const int err =
      load_seccomp_filter(state.plan.filter, state.plan.seccomp_notify ? g_status_fd : -1);
  if (err == ETOOMANYREFS) {
    // Only the send answers this: root's descriptors in flight exceed RLIMIT_NOFILE.
    return launch_failed(state, "sendmsg of the filter's listener to the supervisor", err);
  }
  if (err != 0) {
    return launch_failed(state,
                         "seccomp(SECCOMP_SET_MODE_FILTER, " + state.plan.filter.name() + ")", err);
  }
  return finish_identity_after_send(state);
}

// Only returns on failure (execve), as the other steps do.
bool step_exec(LaunchState& state) {
  if (g_status_fd >= 0) {
    [[maybe_unused]] auto n = ::write(g_status_fd, kStatusExecLine.data(), kStatusExecLine.size);
  }
  PreparedLaunch& prepared = state.prepared;
  ::execve(prepared.executable.c_str(), prepared.argv.data(), prepared.envp.data());
  const int err = errno;
  std::string what = "execve " + prepared.executable + " failed: " + errno_text(err);
  // Why, asked only after the failure.
  const std::string detail = exec_failure_detail(prepared.executable, prepared.looked_up_on_path,
                                                 prepared.module_path, err);
  if (!detail.empty()) what += ": " + detail;
  state.error = StepError{std::move(what), err, true};
  return false;
}

using StepFunction = bool (*)(LaunchState&);

struct LauncherStep {
  LaunchStep step;
  StepFunction run;
};

// The launcher's part of plan/launch_steps.hpp's list, each step with its function.
constexpr std::array<LauncherStep, 6> kLauncherSteps{{
    {LaunchStep::Descriptors, &step_descriptors},
    {LaunchStep::Identity, &step_identity},
    {LaunchStep::NoNewPrivs, &step_no_new_privs},
    {LaunchStep::Landlock, &step_landlock},
    {LaunchStep::Seccomp, &step_seccomp},
    {LaunchStep::Exec, &step_exec},
}};
static_assert(
    [] {
      if (kLauncherSteps.size() != launcher_steps().size()) return false;
      for (std::size_t i = 0; i < kLauncherSteps.size(); ++i) {
        if (kLauncherSteps[i].step != launcher_steps()[i].step) return false;
      }
      return true;
    }(),
    "launch() runs the launcher's steps of plan/launch_steps.hpp, in its order");

// After the first irreversible step the process is half-sandboxed: it leaves with _exit, so
// no destructor or atexit handler (a sanitizer's leak check needs ptrace) runs in that state.
// "PROGRAM: step NAME failed: WHAT: ERRNO" (or the complete message); the exec step's own
// line is "PROGRAM: execve PATH failed: ...", as it always was, with exit 71.
[[noreturn]] void fail_step(const char* program, LaunchStep step, const StepError& error) {
  std::string line = std::string(program) + ": ";
  if (step == LaunchStep::Exec) {
    line += error.what;
  } else {
    line += step_failed_message(step, error.what);
    if (!error.complete) line += ": " + errno_text(error.err);
  }
  const int code =
      exit_code_for(step == LaunchStep::Exec ? ErrorKind::ExecFailed : ErrorKind::StepFailed);
  std::fprintf(stderr, "%s\n", line.c_str());
  report_launch_status(code, line);
  ::_exit(code);
}

}  // namespace

void launch(const Plan& plan, PreparedLaunch& prepared, const char* program) {
  LaunchState state{plan, prepared, {}};
  for (const LauncherStep& step : kLauncherSteps) {
    if (!step.run(state)) fail_step(program, step.step, state.error);
  }
  // step_exec returns only on failure.
  fail_step(program, LaunchStep::Exec, state.error);
}

}  // namespace oarbank
