// sandbox-ctl freeze|thaw|kill|status ID, and list: acts on a running module's container by its id,
// found in the run state sandbox-run keeps (supervise/run_state.hpp). leases and reclaim ID:
// the module users sandbox-run leased (issue 12, supervise/uid_registry.hpp).
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "config/node_config.hpp"
#include "policy/module_id.hpp"
#include "supervise/cgroup_leaf.hpp"
#include "supervise/run_state.hpp"
#include "supervise/uid_registry.hpp"
#include "sys/error.hpp"
#include "sys/text_file.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank::cli {
namespace {

// The state letter of /proc/PID/stat (R, S, T, ...), 0 when it cannot be read (it has ended).
char process_state(pid_t pid) {
  std::string stat;
  try {
    stat = read_text_file("/proc/" + std::to_string(pid) + "/stat");
  } catch (const Error&) {
    return 0;
  }
  const auto close = stat.rfind(')');  // the command name may hold ')' itself
  return close != std::string::npos && close + 2 < stat.size() ? stat[close + 2] : 0;
}

// Whether the recorded process (its start time checked against pid reuse) is stopped.
bool process_stopped(pid_t pid, std::uint64_t start_time) {
  if (pid <= 0 || process_start_time(pid) != start_time) return false;
  const char state = process_state(pid);
  return state == 'T' || state == 't';
}

// SIGCONT to the run's sandbox-run, through a pidfd whose process has the recorded start time.
void continue_supervisor(const RunRecord& record) {
  const UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, record.supervisor_pid, 0)));
  if (!pidfd.valid() || process_start_time(record.supervisor_pid) != record.supervisor_start_time)
    return;
  ::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGCONT, nullptr, 0);
}

// Rows of N cells in columns, each as wide as its widest cell, two spaces apart.
template <std::size_t N>
void print_columns(const std::vector<std::array<std::string, N>>& rows) {
  std::array<std::size_t, N> width{};
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < N; ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < N; ++i) {
      line += row[i];
      if (i + 1 < N) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    std::cout << line << '\n';
  }
  std::cout.flush();
}

constexpr const char* kCommand = "sandbox-ctl";

nlohmann::json status_json(const RunRecord& record) {
  nlohmann::json j{{"id", record.id},
                   {"pid", record.module_pid},
                   {"supervisor_pid", record.supervisor_pid},
                   {"process_group", record.process_group},
                   {"started_at", record.started_at}};
  auto optional = [](const std::optional<std::uint64_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  if (record_names_its_leaf(record)) {
    const std::string& leaf = record.cgroup;
    const bool frozen = read_cgroup_key(leaf + "/cgroup.events", "frozen").value_or(0) == 1;
    j["container"] = "cgroup";
    j["cgroup"] = leaf;
    j["state"] = frozen ? "frozen" : "running";
    j["processes"] = read_cgroup_pids(leaf).size();
    j["cpu_usec"] = optional(read_cgroup_key(leaf + "/cpu.stat", "usage_usec"));
    j["memory_current_bytes"] = optional(read_cgroup_number(leaf + "/memory.current"));
    j["pids_current"] = optional(read_cgroup_number(leaf + "/pids.current"));
  } else {
    j["container"] = "process-group";
    j["cgroup"] = nullptr;
    // A group stopped with SIGSTOP: its leader's state letter is T.
    j["state"] = "running";
    if (process_state(record.module_pid) == 'T') j["state"] = "frozen";
    j["processes"] = nullptr;
    j["cpu_usec"] = nullptr;
    j["memory_current_bytes"] = nullptr;
    j["pids_current"] = nullptr;
  }
  return j;
}

// "42s", "3m", "5h", "2d": how long ago a run started, for the list.
std::string age_text(std::int64_t seconds) {
  if (seconds < 0) seconds = 0;
  if (seconds < 120) return std::to_string(seconds) + "s";
  if (seconds < 2 * 3600) return std::to_string(seconds / 60) + "m";
  if (seconds < 2 * 86400) return std::to_string(seconds / 3600) + "h";
  return std::to_string(seconds / 86400) + "d";
}

// Issue 16: what runs, one line each: id, module pid, container, age, state. A dead run's
// record is torn down on the way, as status does.
int list_runs(const std::string& dir) {
  std::vector<std::array<std::string, 5>> rows;
  rows.push_back({"ID", "PID", "CONTAINER", "AGE", "STATE"});
  const auto now = static_cast<std::int64_t>(std::time(nullptr));
  for (const auto& id : run_record_ids(dir)) {
    bool alive = false;
    auto record = read_run_record(dir, id, alive);
    if (!record || !alive) continue;
    if (!record_names_its_leaf(*record) && !record_group_is_alive(*record)) continue;
    const auto status = status_json(*record);
    rows.push_back({id, std::to_string(record->module_pid), status["container"].get<std::string>(),
                    age_text(now - record->started_at),
                    record->phase == "starting" ? "starting" : status["state"].get<std::string>()});
  }
  print_columns(rows);
  return 0;
}

// Whether a live sandbox-run holds `id` (a dead run's record is torn down on the way).
bool id_is_running(const std::string& id) {
  bool alive = false;
  read_run_record(run_state_dir(), id, alive);
  return alive;
}

// Issue 12: every lease, one line each: id, uid, last run, whether it may be reclaimed now.
int list_leases(const NodeConfig& config) {
  const std::string dir = user_registry_dir();
  const auto now = static_cast<std::int64_t>(std::time(nullptr));
  const std::uint32_t days = config.module_users ? config.module_users->reclaim_after_days
                                                 : ModuleUserRange{}.reclaim_after_days;
  std::vector<std::array<std::string, 4>> rows;
  rows.push_back({"ID", "UID", "LAST-RUN", "RECLAIM"});
  for (const auto& lease : list_module_users(dir)) {
    std::string reclaim = "no: running";
    if (!id_is_running(lease.id)) {
      const std::string obstacle = reclaim_obstacle(lease, now, days);
      reclaim = obstacle.empty() ? "yes" : "no: " + obstacle;
    }
    rows.push_back(
        {lease.id, std::to_string(lease.uid), age_text(now - lease.last_run) + " ago", reclaim});
  }
  print_columns(rows);
  return 0;
}

}  // namespace

int run_sandbox_ctl(const CtlArgs& options) {
  return run_guarded(kCommand, "", [&]() -> int {
    if (options.action == "leases" || options.action == "reclaim") {
      const NodeConfig config = load_node_config(options.config_path);
      if (options.action == "leases") {
        if (!options.id.empty()) throw Error(ErrorKind::Usage, "usage: leases takes no id");
        return list_leases(config);
      }
      if (options.id.empty()) {
        throw Error(ErrorKind::Usage,
                    "usage: reclaim needs the module's id (sandbox-ctl reclaim "
                    "ID; sandbox-ctl leases shows them)");
      }
      // Before the registry is read (attack review, session 16: `reclaim ../reg/x` reached
      // a path outside it).
      if (auto problem = module_id_problem(options.id)) {
        throw Error(ErrorKind::Usage, "module id " + options.id + ": " + *problem);
      }
      const std::uint32_t days = config.module_users ? config.module_users->reclaim_after_days
                                                     : ModuleUserRange{}.reclaim_after_days;
      const UidLease removed =
          reclaim_module_user(user_registry_dir(), options.id, days,
                              static_cast<std::int64_t>(std::time(nullptr)), id_is_running);
      std::cout << "reclaimed uid " << removed.uid << " of module id " << removed.id << std::endl;
      return 0;
    }
    const std::string dir = run_state_dir();
    if (options.action == "list") {
      if (!options.id.empty()) throw Error(ErrorKind::Usage, "usage: list takes no id");
      return list_runs(dir);
    }
    if (options.id.empty()) {
      throw Error(ErrorKind::Usage, "usage: " + options.action +
                                        " needs the module's id (sandbox-ctl " + options.action +
                                        " ID; sandbox-ctl list shows them)");
    }
    if (auto problem = module_id_problem(options.id)) {
      throw Error(ErrorKind::Usage, "module id " + options.id + ": " + *problem);
    }
    bool alive = false;
    bool cleaned = false;
    // A dead run's record (its sandbox-run was killed) is torn down on the way.
    auto record = read_run_record(dir, options.id, alive, &cleaned);
    if (!record || !alive) {
      throw Error(ErrorKind::NotFound,
                  "no module with id " + options.id + " is running (state directory " + dir + ")" +
                      (cleaned ? " (what its killed sandbox-run left was removed)" : ""));
    }
    // A record is trusted no further than its shape (supervise/run_state.hpp).
    const bool cgroup = record_names_its_leaf(*record);
    if (!cgroup && !record_group_is_alive(*record)) {
      throw Error(ErrorKind::NotFound, "module " + options.id + ": its process is gone");
    }
    const std::string& action = options.action;
    if (action == "status") {
      std::cout << status_json(*record).dump(2) << std::endl;
      return 0;
    }
    int err = 0;
    if (action == "freeze" || action == "thaw") {
      const bool freeze = action == "freeze";
      if (cgroup) {
        err = set_cgroup_frozen(record->cgroup, freeze);
        // Session 21's attack review: a module whose first process stopped itself (SIGSTOP)
        // has its leaf frozen by sandbox-run; thawed alone it stayed stopped, "running" by
        // status, and never ended. Then the thaw continues it as job control's `fg` does:
        // SIGCONT to its sandbox-run, which thaws and continues the module. (A thaw after a
        // freeze leaves alone what the module itself stopped on purpose: the diff review.)
        if (!freeze && err == 0 && process_stopped(record->module_pid, record->module_start_time))
          continue_supervisor(*record);
      } else {
        err = signal_recorded_group(*record, freeze ? SIGSTOP : SIGCONT);
      }
    } else {  // kill: sandbox-run sees its module die and tears the rest down
      if (cgroup) {
        if (!kill_cgroup(record->cgroup)) err = ETIMEDOUT;
      } else {
        err = signal_recorded_group(*record, SIGKILL);
      }
    }
    if (err != 0) {
      throw Error(ErrorKind::StepFailed, action + " " + options.id + ": " + errno_text(err));
    }
    return 0;
  });
}

}  // namespace oarbank::cli
