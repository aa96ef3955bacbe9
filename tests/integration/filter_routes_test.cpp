// Issue 10, the filter and launcher side, from inside the real sandbox: no setuid or setgid
// files, the terminal and console ioctls a module has no business calling, personality(),
// unix datagram socketpairs without the broker grant, and execve of a file with file
// capabilities. The filter does not depend on the Landlock ABI, so these run uncapped only.
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sandbox_fixture.hpp"

namespace oarbank::it {
namespace {

// Every entry under `dir` (recursively) whose mode has the setuid or setgid bit.
std::vector<std::string> setid_entries(const std::string& dir) {
  std::vector<std::string> found;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return found;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;
    if ((st.st_mode & (S_ISUID | S_ISGID)) != 0) found.push_back(path);
    if (S_ISDIR(st.st_mode)) {
      for (auto& inner : setid_entries(path)) found.push_back(inner);
    }
  }
  ::closedir(d);
  return found;
}

// ---------------------------------------------------------------------------------------------
// 1. No setuid or setgid files (as systemd's RestrictSUIDSGID=): every call that sets a mode,
// setuid and setgid separately; the plain modes still work.
// ---------------------------------------------------------------------------------------------
class SetuidSetgid : public UncappedTest {};

TEST_F(SetuidSetgid, EveryCallThatSetsAModeRefusesTheBits) {
  const std::string w = tree.path("work");
  std::vector<Probe> probes = {{{"write", w + "/f"}, kOk}};
  for (const char* how : {"chmod", "fchmod", "fchmodat", "fchmodat2"}) {
    probes.push_back({{"mode-call", how, w + "/f", "4755"}, kEperm});
    probes.push_back({{"mode-call", how, w + "/f", "2755"}, kEperm});
    probes.push_back({{"mode-call", how, w + "/f", "6755"}, kEperm});
    probes.push_back({{"mode-call", how, w + "/f", "0755"}, kOk});
  }
  probes.push_back({{"mode", w + "/f"}, "0755"});
  // The calls that create: the mode counts with O_CREAT or O_TMPFILE.
  for (const char* how : {"open", "openat", "creat", "mkdir", "mkdirat", "mknod", "mknodat"}) {
    const std::string base = w + "/" + how;
    probes.push_back({{"mode-call", how, base + "-suid", "4755"}, kEperm});
    probes.push_back({{"mode-call", how, base + "-sgid", "2755"}, kEperm});
    probes.push_back({{"mode-call", how, base + "-plain", "0755"}, kOk});
    probes.push_back({{"mode", base + "-suid"}, "errno ENOENT"});
    probes.push_back({{"mode", base + "-sgid"}, "errno ENOENT"});
    probes.push_back({{"mode", base + "-plain"}, "0755"});
  }
  for (const char* how : {"open-tmpfile", "openat-tmpfile"}) {
    probes.push_back({{"mode-call", how, w, "4700"}, kEperm});
    probes.push_back({{"mode-call", how, w, "2700"}, kEperm});
    probes.push_back({{"mode-call", how, w, "0600"}, kOk});
  }
  // openat2's mode is in memory the filter cannot read: ENOSYS, so callers fall back.
  probes.push_back({{"mode-call", "openat2", w + "/o2-suid", "4755"}, "errno ENOSYS"});
  probes.push_back({{"mode-call", "openat2", w + "/o2-plain", "0644"}, "errno ENOSYS"});
  // An existing file opened without O_CREAT: the mode argument is ignored, so allowed.
  probes.push_back({{"read", w + "/f"}, kOk});
  expect_probes(base_policy(), probes);
  EXPECT_EQ(setid_entries(w), std::vector<std::string>{});
  EXPECT_FALSE(exists(w + "/o2-plain"));
}

TEST_F(SetuidSetgid, EveryWritableDirectoryAndAModuleItsChildren) {
  // The same refusal in temp and data, and from a child process (the filter is inherited).
  const std::string probe_path = tree.probe();
  expect_probes(base_policy(),
                {
                    {{"mode-call", "mkdir", tree.path("temp/d"), "2775"}, kEperm},
                    {{"mode-call", "openat", tree.path("data0/x"), "4711"}, kEperm},
                    {{"spawn", probe_path, "mode-call", "openat", tree.path("data1/y"), "6755"},
                     "errno EPERM\nexit 0"},
                });
  for (const char* dir : {"temp", "data0", "data1"}) {
    EXPECT_EQ(setid_entries(tree.path(dir)), std::vector<std::string>{}) << dir;
  }
}

TEST_F(SetuidSetgid, ToolsThatOpenAndChmodStillWork) {
  // libc never calls openat2, so coreutils, the shell and Python create files as before;
  // chmod u+s is refused, chmod 0755 works.
  const std::string w = tree.path("work");
  const std::string py = "open('" + w + "/py.txt', 'w').write('x'); import os; os.chmod('" + w +
                         "/py.txt', 0o755); print(oct(os.stat('" + w +
                         "/py.txt').st_mode & 0o7777))";
  std::vector<Probe> probes = {
      {{"spawn", "/bin/sh", "-c", "touch " + w + "/touched && echo done"}, "done\nexit 0"},
      {{"spawn", "/bin/sh", "-c",
        "echo x > " + w + "/sh.txt && chmod 0750 " + w + "/sh.txt && echo done"},
       "done\nexit 0"},
      {{"spawn", "/bin/sh", "-c", "chmod u+s " + w + "/sh.txt 2>/dev/null; echo $?"}, "1\nexit 0"},
      {{"spawn", "/bin/sh", "-c",
        "cp /bin/sh " + w + "/t && chmod 06755 " + w + "/t 2>/dev/null; echo $?"},
       "1\nexit 0"},
      {{"mode", w + "/sh.txt"}, "0750"},
  };
  if (have_program("/usr/bin/python3")) {
    probes.push_back({{"spawn", "/usr/bin/python3", "-c", py}, "0o755\nexit 0"});
  }
  expect_probes(base_policy(), probes);
  EXPECT_EQ(setid_entries(w), std::vector<std::string>{});
}

// ---------------------------------------------------------------------------------------------
// 2. Terminal and console ioctls on a real pseudo-terminal handed to a bare sandbox-exec.
// ---------------------------------------------------------------------------------------------
class TerminalIoctls : public UncappedTest {
 protected:
  static std::string high(const char* command) {
    return "0xffffffff0000" + std::string(command).substr(2);
  }
};

TEST_F(TerminalIoctls, RefusedWhateverTheUpperBitsAndOrdinaryOnesStay) {
  Pty pty;
  RunOptions run;
  run.stdin_fd = pty.slave();
  run.controlling_terminal = true;
  // Control, outside the sandbox on the same terminal: the console ioctls answer ENOTTY (a
  // pty is not a virtual console), so EPERM below is the filter's.
  RunResult control = run_command(
      {tree.probe(), "batch", "ioctl", "0", "0x4B33", ",", "ioctl", "0", "0x5603"}, run);
  EXPECT_TRUE(control.exited(0)) << control.describe();
  EXPECT_EQ(control.out, "errno ENOTTY\nerrno ENOTTY\n") << control.describe();
  LaunchOptions o;
  o.run = run;
  std::vector<Probe> probes = {
      {{"ioctl", "0", "0x5401"}, kOk},  // TCGETS
      {{"ioctl", "0", "0x5413"}, kOk},  // TIOCGWINSZ
      {{"ioctl", "0", "0x540F"}, kOk},  // TIOCGPGRP
  };
  // TIOCNOTTY, TIOCSCTTY (the module leads the session: unfiltered, it would answer ok),
  // TIOCEXCL, TIOCNXCL, TIOCVHANGUP (unfiltered: EPERM too, for want of CAP_SYS_ADMIN; the
  // unit test runs the program on it), KDGKBTYPE, KDSETMODE, VT_GETSTATE, VT_ACTIVATE.
  for (const char* command :
       {"0x5422", "0x540E", "0x540C", "0x540D", "0x5437", "0x4B33", "0x4B3A", "0x5603", "0x5606"}) {
    probes.push_back({{"ioctl", "0", command}, kEperm});
    probes.push_back({{"ioctl", "0", high(command)}, kEperm});
  }
  probes.push_back({{"ioctl", "0", "0x5401"}, kOk});  // still our terminal
  expect_probes(base_policy(), probes, o);
}

TEST_F(TerminalIoctls, RefusedOnATerminalThatIsNotTheControllingOne) {
  // Unfiltered: TIOCNOTTY answers ENOTTY (not our controlling terminal), TIOCEXCL ok.
  Pty pty;
  LaunchOptions o;
  o.run.stdin_fd = pty.slave();
  expect_probes(base_policy(),
                {
                    {{"ioctl", "0", "0x5422"}, kEperm},
                    {{"ioctl", "0", "0xffffffff00005422"}, kEperm},
                    {{"ioctl", "0", "0x540C"}, kEperm},
                    {{"ioctl", "0", "0x4B33"}, kEperm},
                    {{"ioctl", "0", "0x5413"}, kOk},
                },
                o);
}

// ---------------------------------------------------------------------------------------------
// 3. personality(): the query and the plain personalities only, on the 32 bits the kernel reads.
// ---------------------------------------------------------------------------------------------
class Personality : public UncappedTest {};

TEST_F(Personality, OnlyTheQueryAndPlainLinux) {
  expect_probes(base_policy(),
                {
                    {{"personality", "0xffffffff"}, kOk},          // the query
                    {{"personality", "0xffffffffffffffff"}, kOk},  // the query, upper bits ignored
                    {{"personality", "0x0040000"}, kEperm},        // ADDR_NO_RANDOMIZE (setarch -R)
                    {{"personality", "0x0400000"}, kEperm},        // READ_IMPLIES_EXEC
                    {{"personality", "0xffffffff00040000"}, kEperm},
                    {{"personality", "0xffffffff00400000"}, kEperm},
                    {{"personality", "0x0440000"}, kEperm},
                    {{"personality", "0x0000008"}, kOk},           // PER_LINUX32
                    {{"personality", "0x0000000"}, kOk},           // PER_LINUX
                    {{"personality", "0xffffffff00000000"}, kOk},  // PER_LINUX, upper bits ignored
                });
}

TEST_F(Personality, SetarchRandomizationOffIsRefused) {
  if (!have_program("/usr/bin/setarch")) GTEST_SKIP() << "no util-linux setarch here";
  // setarch makes the same call; its plain personality (PER_LINUX) stays.
  expect_probes(
      base_policy(),
      {
          {{"spawn", "/bin/sh", "-c", "setarch -R /bin/sh -c true 2>/dev/null; echo $?"},
           "1\nexit 0"},
          {{"spawn", "/bin/sh", "-c", "setarch x86_64 -R /bin/sh -c true 2>/dev/null; echo $?"},
           "1\nexit 0"},
          {{"spawn", "/bin/sh", "-c", "setarch x86_64 /bin/sh -c true; echo $?"}, "0\nexit 0"},
      });
}

// ---------------------------------------------------------------------------------------------
// 4. socketpair(AF_UNIX, SOCK_DGRAM) without the broker grant: its unbound socket could
// sendto() any pathname socket of the host (a /dev/log-like one here).
// ---------------------------------------------------------------------------------------------
class DatagramPairs : public UncappedTest {
 protected:
  void SetUp() override {
    log_path_ = tree.path("outside/devlog");
    log_fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ASSERT_GE(log_fd_, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, log_path_.c_str(), log_path_.size());
    ASSERT_EQ(::bind(log_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::chmod(log_path_.c_str(), 0666), 0);  // as the journal's and syslog's are
  }
  void TearDown() override {
    if (log_fd_ >= 0) ::close(log_fd_);
  }
  // How many datagrams the stand-in log socket holds.
  int received() const {
    int count = 0;
    char byte;
    while (::recv(log_fd_, &byte, 1, 0) == 1) ++count;
    return count;
  }
  std::string log_path_;
  int log_fd_ = -1;
};

TEST_F(DatagramPairs, RefusedWithoutTheBrokerGrantStreamsAndSeqpacketsStay) {
  const char* const refused = "errno EPROTONOSUPPORT";
  expect_probes(base_policy(), {
                                   {{"socketpair", "unix", "dgram"}, refused},
                                   {{"socketpair", "unix", "dgram", "nonblock-cloexec"}, refused},
                                   {{"socketpair", "unix", "raw"},
                                    refused},  // the kernel makes a unix SOCK_RAW a datagram one
                                   {{"socketpair-sendto", "dgram", log_path_}, refused},
                                   {{"socketpair-sendto", "raw", log_path_}, refused},
                                   {{"socketpair", "unix", "stream"}, kOk},
                                   {{"socketpair", "unix", "stream", "nonblock-cloexec"}, kOk},
                                   {{"socketpair", "unix", "seqpacket"}, kOk},
                                   {{"socketpair", "unix", "seqpacket", "nonblock-cloexec"}, kOk},
                               });
  if (have_program("/usr/bin/python3")) {
    // Python's multiprocessing.Pipe is a stream pair.
    expect_probes(
        base_policy(),
        {{{"spawn", "/usr/bin/python3", "-c",
           "import multiprocessing as m; a, b = m.Pipe(); a.send(41); print(b.recv() + 1)"},
          "42\nexit 0"}});
  }
  EXPECT_EQ(received(), 0);
}

TEST_F(DatagramPairs, TheBrokerGrantChangesNothing) {
  // With the grant, unix sockets are allowed and so are datagram pairs (docs/seccomp.md).
  expect_probes(with(base_policy(), "broker", true),
                {
                    {{"socketpair", "unix", "dgram"}, kOk},
                    {{"socketpair", "unix", "seqpacket"}, kOk},
                    {{"socketpair-sendto", "dgram", log_path_}, kOk},
                });
  EXPECT_EQ(received(), 1);
}

// ---------------------------------------------------------------------------------------------
// 5. execve of a file with file capabilities (Debian's ping: cap_net_raw+ep).
// ---------------------------------------------------------------------------------------------
class FileCapabilities : public UncappedTest {
 protected:
  // A copy of the payload in the bundle with cap_net_raw+ep, as ping has.
  std::string capable_copy() {
    const std::string path = tree.path("bundle/capable");
    copy_file(tree.probe(), path, 0755);
    RunResult r = run_command({"/usr/sbin/setcap", "cap_net_raw+ep", path});
    if (!r.exited(0)) return "";
    return path;
  }
};

TEST_F(FileCapabilities, ExecFailureSaysTheFileAsksForCapabilities) {
  if (!running_as_root()) GTEST_SKIP() << "setcap needs root";
  if (::access("/usr/sbin/setcap", X_OK) != 0) GTEST_SKIP() << "no setcap (libcap2-bin)";
  const std::string path = capable_copy();
  ASSERT_FALSE(path.empty()) << "setcap failed";
  LaunchOptions o;
  o.argv = {path, "exit", "0"};
  // Started as root, the launcher empties the bounding set: the kernel refuses a file whose
  // effective bit asks for capabilities it cannot grant (EPERM), and the line says why.
  RunResult r = launch(base_policy(), {}, o);
  expect_launcher_failure(
      r, 71,
      {"execve " + path, "EPERM",
       "the file asks for capabilities (security.capability) a module cannot have"});
  // Execute-only (0711; session 18's review), the launcher cannot read the attribute through a
  // descriptor (the filter refuses it by path): the line still says what it may be.
  ASSERT_EQ(::chmod(path.c_str(), 0711), 0);
  r = launch(base_policy(), {}, o);
  expect_launcher_failure(
      r, 71, {"execve " + path, "EPERM", "if the file asks for capabilities (security.capability"});
  ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
  // The same program without capabilities runs; a plain EACCES keeps its plain line.
  copy_file(tree.probe(), tree.path("bundle/plain"), 0755);
  o.argv = {tree.path("bundle/plain"), "exit", "3"};
  EXPECT_TRUE(launch(base_policy(), {}, o).exited(3));
  o.argv = {tree.path("outside/prog")};
  r = launch(base_policy(), {}, o);
  expect_launcher_failure(r, 71, {"EACCES"});
  EXPECT_EQ(r.err.find("capabilities"), std::string::npos) << r.err;
}

TEST_F(FileCapabilities, StartedByAnotherUserTheFileRunsWithoutThem) {
  // Not root: the bounding set is the caller's, so the kernel does not refuse the file;
  // no_new_privs keeps it from gaining anything, and it runs with no capability at all.
  if (!running_as_root()) GTEST_SKIP() << "setcap needs root";
  if (::access("/usr/sbin/setcap", X_OK) != 0) GTEST_SKIP() << "no setcap (libcap2-bin)";
  const std::string path = capable_copy();
  ASSERT_FALSE(path.empty()) << "setcap failed";
  LaunchOptions o;
  o.run.user = std::make_pair(module_uid(), module_gid());
  o.argv = {path, "status"};
  RunResult r = launch(base_policy(), {}, o);
  ASSERT_TRUE(r.exited(0)) << r.describe();
  for (const char* line :
       {"CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "NoNewPrivs:\t1"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  }
}

}  // namespace
}  // namespace oarbank::it
