// The launch of the page: identity, no_new_privs, Landlock, seccomp, execve, in that order.
#pragma once

#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "probe/path_facts.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {

// Everything that can fail softly, done before the first irreversible step: the Landlock
// ruleset with all its rules, the executable's path, argv and envp as C arrays (pointing into
// the plan, which must outlive the launch).
struct PreparedLaunch {
  UniqueFd ruleset;
  std::string executable;
  bool looked_up_on_path = false;  // a name without '/' found nowhere on the module's PATH
  std::string module_path;         // that PATH, for the message
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::string working_directory;
  // The O_PATH descriptors the plan's paths were checked on (owned by OpenedPaths, which
  // outlives the launch): the access check and the chdir use these, not the names again.
  int working_directory_fd = -1;
  std::vector<int> writable_dir_fds;  // one per plan.writable_dirs entry
};

// Throws Error(StepFailed) if the ruleset cannot be built.
PreparedLaunch prepare_launch(const Plan& plan, const Policy& policy, const OpenedPaths& paths);

// Walks the launcher's steps of plan/launch_steps.hpp (descriptors, identity, no_new_privs,
// landlock, seccomp, exec) and execs the module. Never returns: on failure it prints one line
// and exits 70 (a step could not be applied in full) or 71 (execve failed).
[[noreturn]] void launch(const Plan& plan, PreparedLaunch& prepared, const char* program_name);

// sandbox-run's status channel (sandbox-exec --status-fd): the launcher writes
// "CODE<TAB>LINE\n" there when it fails, and "exec\n" just before the module's execve (both
// composed by plan/status_line.hpp). The descriptor is close-on-exec, so its end of file tells
// the parent the exec happened. -1: none.
void set_launch_status_fd(int fd);
void report_launch_status(int code, const std::string& line);

// Finds `name` in the colon-separated `path_list` as execvp does, for the module's PATH.
std::string resolve_executable(const std::string& name, const std::string& path_list);

}  // namespace oarbank
