// Issue 11: the run state (src/supervise/run_state.cpp) on a temporary directory: records
// made, locked, trusted only as written, stale records cleaned. No root, no cgroup2: the
// records name no leaf, and a dead run's process group is a child of this test.
#include "supervise/run_state.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "sys/error.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {
namespace {

namespace fs = std::filesystem;

class RunStateRecords : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "oarbank-runs-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    base_ = pattern;
    dir_ = (base_ / "runs").string();  // made by the first claim, 0700
  }
  void TearDown() override {
    if (victim_ > 0) {
      ::kill(victim_, SIGKILL);
      ::waitpid(victim_, nullptr, 0);
    }
    fs::remove_all(base_);
  }

  RunRecord intent(const std::string& id) const {
    RunRecord r;
    r.id = id;
    r.supervisor_pid = ::getpid();
    r.supervisor_start_time = process_start_time(::getpid());
    r.started_at = 1700000000;
    return r;
  }

  // A process group of its own, standing for a dead run's module.
  void start_victim() {
    victim_ = ::fork();
    ASSERT_GE(victim_, 0);
    if (victim_ == 0) {
      ::setpgid(0, 0);
      for (;;) ::pause();
    }
    ::setpgid(victim_, victim_);  // both sides, so it holds whoever runs first
    using namespace std::chrono_literals;
    for (int i = 0; i < 200 && ::getpgid(victim_) != victim_; ++i) std::this_thread::sleep_for(1ms);
    ASSERT_EQ(::getpgid(victim_), victim_);
  }
  bool victim_alive() const { return ::waitpid(victim_, nullptr, WNOHANG) == 0; }

  // A run that claimed `record` and died without finishing (SIGKILL, a crash): its record
  // stays, its lock goes with the process.
  void die_holding(const RunRecord& record) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      try {
        auto state = RunState::claim(dir_, record);
        ::_exit(0);  // no finish(), no destructor: as if killed
      } catch (...) {
        ::_exit(1);
      }
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }

  RunRecord victim_record(const std::string& id) const {
    RunRecord r = intent(id);
    r.supervisor_pid = 0;  // its supervisor is gone
    r.supervisor_start_time = 0;
    r.module_pid = victim_;
    r.process_group = victim_;
    r.module_start_time = process_start_time(victim_);
    r.phase = "running";
    return r;
  }

  fs::path base_;
  std::string dir_;
  pid_t victim_ = -1;
};

TEST_F(RunStateRecords, AClaimMakesTheRecordLockedAndTheIdBusyUntilFinished) {
  auto state = RunState::claim(dir_, intent("job"));
  const fs::path file = fs::path(dir_) / "job.json";
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600U);
  EXPECT_EQ(st.st_uid, ::geteuid());
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700U);
  // Locked: another open file description cannot take the lock.
  UniqueFd other(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(other.valid());
  EXPECT_NE(::flock(other.get(), LOCK_EX | LOCK_NB), 0);
  EXPECT_EQ(errno, EWOULDBLOCK);
  // Read as alive, with what was written.
  bool alive = false;
  auto record = read_run_record(dir_, "job", alive);
  ASSERT_TRUE(record.has_value());
  EXPECT_TRUE(alive);
  EXPECT_EQ(record->supervisor_pid, ::getpid());
  EXPECT_EQ(record->phase, "starting");
  EXPECT_EQ(run_record_ids(dir_), std::vector<std::string>{"job"});
  // A second claim of the id while its supervisor lives is refused; a sweep leaves it.
  try {
    RunState::claim(dir_, intent("job"));
    FAIL() << "a live run's id was claimed twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Busy);
  }
  EXPECT_TRUE(clean_stale_runs(dir_).empty());
  // A write keeps the record trusted (mtime and ctime together).
  RunRecord running = state.record();
  running.phase = "running";
  state.write(running);
  record = read_run_record(dir_, "job", alive);
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->phase, "running");
  state.finish();
  EXPECT_FALSE(fs::exists(file));
  EXPECT_TRUE(run_record_ids(dir_).empty());
}

TEST_F(RunStateRecords, ADeadRunsRecordIsCleanedAndWhatItNamesTornDown) {
  start_victim();
  die_holding(victim_record("job"));
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "job.json"));
  EXPECT_EQ(clean_stale_runs(dir_), std::vector<std::string>{"job"});
  EXPECT_FALSE(fs::exists(fs::path(dir_) / "job.json"));
  // Trusted: its process group (leader checked by pid and start time) was killed.
  int status = 0;
  ASSERT_EQ(::waitpid(victim_, &status, 0), victim_);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  victim_ = -1;
}

TEST_F(RunStateRecords, TheNextClaimOfADeadRunsIdTearsItDownFirst) {
  start_victim();
  die_holding(victim_record("job"));
  auto state = RunState::claim(dir_, intent("job"));
  int status = 0;
  ASSERT_EQ(::waitpid(victim_, &status, 0), victim_);
  EXPECT_TRUE(WIFSIGNALED(status));
  victim_ = -1;
  EXPECT_EQ(state.record().supervisor_pid, ::getpid());
}

TEST_F(RunStateRecords, ReadingADeadRecordCleansItAndSaysSo) {
  start_victim();
  die_holding(victim_record("job"));
  bool alive = true;
  bool cleaned = false;
  auto record = read_run_record(dir_, "job", alive, &cleaned);
  ASSERT_TRUE(record.has_value());
  EXPECT_FALSE(alive);
  EXPECT_TRUE(cleaned);
  EXPECT_EQ(record->module_pid, victim_);
  EXPECT_FALSE(fs::exists(fs::path(dir_) / "job.json"));
}

// A record is acted on only as this user wrote it: not after a chmod (by mode), not after a
// chmod back (by ctime), not when it is another kind of file.
TEST_F(RunStateRecords, ARecordChangedSinceItsWriteIsRemovedButNeverActedOn) {
  start_victim();
  for (const bool chmod_back : {false, true}) {
    die_holding(victim_record("job"));
    const fs::path file = fs::path(dir_) / "job.json";
    // Past the timestamp granularity, so that the chmod's ctime differs from the write's.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
    if (chmod_back) {
      ASSERT_EQ(::chmod(file.c_str(), 0600), 0);
    }
    bool alive = true;
    bool cleaned = false;
    EXPECT_EQ(read_run_record(dir_, "job", alive, &cleaned), std::nullopt) << chmod_back;
    EXPECT_TRUE(cleaned);
    EXPECT_FALSE(fs::exists(file));
    EXPECT_TRUE(victim_alive()) << "an untrusted record's process group was killed";
  }
  // Not a regular file: neither read, nor followed, nor removed by a sweep.
  const fs::path target = base_ / "target";
  { std::ofstream(target) << "not a record"; }
  fs::create_symlink(target, fs::path(dir_) / "link.json");
  ASSERT_EQ(::mkfifo((fs::path(dir_) / "fifo.json").c_str(), 0600), 0);
  EXPECT_TRUE(clean_stale_runs(dir_).empty());
  bool alive = true;
  EXPECT_EQ(read_run_record(dir_, "link", alive), std::nullopt);
  EXPECT_EQ(read_run_record(dir_, "fifo", alive), std::nullopt);
  EXPECT_TRUE(victim_alive());
  // The claim that needs the name removes it, and the link's target is untouched.
  auto state = RunState::claim(dir_, intent("link"));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(fs::path(dir_) / "link.json")));
  std::ifstream in(target);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "not a record");
}

TEST_F(RunStateRecords, TheChildsPrefixCompletesTheClaimedRecord) {
  RunRecord r = intent("job");
  r.cgroup = "/sys/fs/cgroup/x/oarbank-job";
  r.netns = true;
  // The child's record: the prefix plus what record_self_as_module writes is a whole record.
  auto state = RunState::claim(dir_, r);
  const std::string prefix = state.child_record_prefix();
  ASSERT_EQ(record_self_as_module(state.fd(), prefix.data(), prefix.size()), 0);
  bool alive = false;
  auto written = read_run_record(dir_, "job", alive);
  ASSERT_TRUE(written.has_value());
  EXPECT_EQ(written->module_pid, ::getpid());
  EXPECT_EQ(written->process_group, ::getpid());
  EXPECT_EQ(written->module_start_time, process_start_time(::getpid()));
  EXPECT_EQ(written->phase, "running");
  EXPECT_EQ(written->cgroup, r.cgroup);
  EXPECT_TRUE(written->netns);
}

TEST_F(RunStateRecords, AStateDirectoryOthersCanWriteIsRefusedAsRootElseRepaired) {
  fs::create_directory(dir_);
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  if (::geteuid() == 0) {
    EXPECT_THROW(RunState::claim(dir_, intent("job")), Error);
  } else {
    std::string repaired;
    UniqueFd fd = open_state_dir(dir_, false, &repaired);
    EXPECT_TRUE(fd.valid());
    EXPECT_NE(repaired.find("(mode 0777, now 0700)"), std::string::npos) << repaired;
  }
  // A symbolic link anywhere on the path is refused, never followed.
  fs::create_directory_symlink(base_, base_ / "via-link");
  EXPECT_THROW(open_state_dir((base_ / "via-link" / "runs").string(), false), Error);
}

// Moved here from protected_paths_test.cpp (issue 11), assertions unchanged.
TEST(RunRecord, RoundTripsAndRefusesWhatIsNotARecord) {
  RunRecord r{.id = "m1",
              .supervisor_pid = 10,
              .supervisor_start_time = 11,
              .module_pid = 12,
              .module_start_time = 13,
              .process_group = 12,
              .cgroup = "/sys/fs/cgroup/x/oarbank-m1",
              .netns = true,
              .phase = "running",
              .started_at = 14};
  auto back = run_record_from_json(run_record_to_json(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->id, "m1");
  EXPECT_EQ(back->supervisor_start_time, 11U);
  EXPECT_EQ(back->module_pid, 12);
  EXPECT_EQ(back->cgroup, r.cgroup);
  EXPECT_TRUE(back->netns);
  EXPECT_EQ(back->phase, "running");
  EXPECT_FALSE(run_record_from_json(""));
  EXPECT_FALSE(run_record_from_json("[]"));
  EXPECT_FALSE(run_record_from_json(R"({"id":"m1"})"));
}

TEST(RunRecord, TheChildRecordsItselfAsAWholeRecord) {
  // What the spawned child writes before anything else: the prefix the supervisor made, with
  // its own pid (module and group leader) and start time, cut to length.
  FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  const int fd = ::fileno(file);
  const std::string longer(300, 'x');
  ASSERT_EQ(::pwrite(fd, longer.data(), longer.size(), 0), 300);
  const std::string prefix =
      R"({"cgroup":null,"container":"process-group","id":"m","netns":false,"phase":"running",)"
      R"("started_at":0,"supervisor_pid":1,"supervisor_start_time":2,)";
  ASSERT_EQ(record_self_as_module(fd, prefix.data(), prefix.size()), 0);
  std::string text(4096, '\0');
  text.resize(static_cast<std::size_t>(::pread(fd, text.data(), text.size(), 0)));
  auto record = run_record_from_json(text);
  ASSERT_TRUE(record) << text;
  EXPECT_EQ(record->module_pid, ::getpid());
  EXPECT_EQ(record->process_group, ::getpid());
  EXPECT_EQ(record->module_start_time, process_start_time(::getpid()));
  EXPECT_NE(record->module_start_time, 0U);
  std::fclose(file);
}

}  // namespace
}  // namespace oarbank
