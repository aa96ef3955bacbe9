// The probe payload's sub-commands about the module's own mounts (issue 12): /dev/shm, the
// noexec writable directories, code run through a descriptor, /proc and the pty. Same
// conventions as probe_payload.cpp: one line, "ok" or "errno NAME" (or the named result).
#include <dirent.h>
#include <fcntl.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int say(long rc) {
  if (rc < 0) {
    const char* name = strerrorname_np(errno);
    std::printf("errno %s\n", name != nullptr ? name : "?");
  } else {
    std::printf("ok\n");
  }
  std::fflush(stdout);
  return 0;
}

// The entries of a directory, sorted, or "errno NAME".
std::string entries(const char* path) {
  DIR* dir = opendir(path);
  if (dir == nullptr) return std::string("errno ") + strerrorname_np(errno);
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0)
      names.emplace_back(entry->d_name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : " ") + name;
  return out;
}

// A copy of file `from` in a new memfd (not close-on-exec: /proc/self/fd/N must stay), or -1.
// `flags`: memfd_create's (MFD_NOEXEC_SEAL is 8, Linux 6.3).
int memfd_copy(const char* from, unsigned flags = 0) {
  int in = open(from, O_RDONLY | O_CLOEXEC);
  if (in < 0) return -1;
  int fd = static_cast<int>(syscall(SYS_memfd_create, "probe", flags));
  if (fd < 0) return -1;
  char buf[65536];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0) {
    if (write(fd, buf, static_cast<size_t>(n)) != n) return -1;
  }
  close(in);
  return fd;
}

// Runs `exec` in a child that execs this payload's "exec-ran" there: "ok" when the exec
// happened (the child printed nothing else), else the errno the exec failed with.
template <typename Exec>
int exec_in_child(Exec exec) {
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    exec();
    _exit(100 + errno);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) >= 100) {
    errno = WEXITSTATUS(status) - 100;
    return say(-1);
  }
  return 0;  // the exec'd payload printed "ok"
}

}  // namespace

// Returns -1 when `cmd` is not one of these.
int run_mounts_command(const std::string& cmd, const std::vector<std::string>& a) {
  auto need = [&](std::size_t n) { return a.size() >= n; };
  if (cmd == "exec-ran") return say(0);
  if (cmd == "memfd_create-sealed")
    return say(syscall(SYS_memfd_create, "x", 8U /* MFD_NOEXEC_SEAL */));
  if (cmd == "getpid") {
    std::printf("pid %d\n", getpid());
    std::fflush(stdout);
    return 0;
  }
  if (cmd == "wait-file" && need(1)) {
    // Waits (at most 20 s) until PATH exists: a module that holds what it made while the test
    // looks from elsewhere.
    for (int i = 0; i < 2000 && access(a[0].c_str(), F_OK) != 0; ++i) usleep(10000);
    return say(access(a[0].c_str(), F_OK));
  }
  // --- /dev/shm
  if (cmd == "sem-open" && need(1)) {
    sem_t* sem = sem_open(("/" + a[0]).c_str(), O_CREAT | O_EXCL, 0600, 0);
    if (sem == SEM_FAILED) return say(-1);
    if (sem_post(sem) != 0 || sem_wait(sem) != 0) return say(-1);
    return say(0);  // left there (not unlinked): the test looks for it elsewhere
  }
  if (cmd == "shm-open" && need(1)) {
    int fd = shm_open(("/" + a[0]).c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) return say(-1);
    if (ftruncate(fd, 4096) != 0) return say(-1);
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return say(-1);
    static_cast<char*>(p)[0] = 'x';
    return say(0);
  }
  if (cmd == "shm-exists" && need(1)) {
    struct stat st {};
    return say(stat(("/dev/shm/" + a[0]).c_str(), &st));
  }
  // --- written code
  if ((cmd == "mmap-exec" || cmd == "mprotect-exec") && need(1)) {
    int fd = open(a[0].c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return say(-1);
    const int prot = cmd == "mmap-exec" ? PROT_READ | PROT_EXEC : PROT_READ;
    void* p = mmap(nullptr, 4096, prot, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) return say(-1);
    if (cmd == "mprotect-exec") return say(mprotect(p, 4096, PROT_READ | PROT_EXEC));
    return say(0);
  }
  if ((cmd == "memfd-execveat" || cmd == "sealed-memfd-execveat") && need(1)) {
    // A copy of the payload A[0] in a memfd (sealed: MFD_NOEXEC_SEAL), run by
    // execveat(fd, "", AT_EMPTY_PATH).
    int fd = memfd_copy(a[0].c_str(), cmd == "memfd-execveat" ? 0 : 8);
    if (fd < 0) return say(-1);
    return exec_in_child([&] {
      char* args[] = {const_cast<char*>("probe"), const_cast<char*>("exec-ran"), nullptr};
      syscall(SYS_execveat, fd, "", args, environ, AT_EMPTY_PATH);
    });
  }
  if ((cmd == "memfd-proc-exec" || cmd == "sealed-memfd-proc-exec" || cmd == "fd-proc-exec") &&
      need(1)) {
    // execve of /proc/self/fd/N: N a memfd copy of A[0] (sealed: MFD_NOEXEC_SEAL), or A[0]
    // itself opened.
    int fd = cmd == "fd-proc-exec"      ? open(a[0].c_str(), O_RDONLY)
             : cmd == "memfd-proc-exec" ? memfd_copy(a[0].c_str())
                                        : memfd_copy(a[0].c_str(), 8);
    if (fd < 0) return say(-1);
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    return exec_in_child([&] {
      char* args[] = {const_cast<char*>("probe"), const_cast<char*>("exec-ran"), nullptr};
      execve(path.c_str(), args, environ);
    });
  }
  if (cmd == "fd-execveat" && need(1)) {
    int fd = open(a[0].c_str(), O_RDONLY);
    if (fd < 0) return say(-1);
    return exec_in_child([&] {
      char* args[] = {const_cast<char*>("probe"), const_cast<char*>("exec-ran"), nullptr};
      syscall(SYS_execveat, fd, "", args, environ, AT_EMPTY_PATH);
    });
  }
  // --- /proc
  if (cmd == "proc-pids") {
    // The numeric entries of /proc: the processes this module sees.
    std::string pids;
    for (const auto& name : [] {
           std::vector<std::string> out;
           std::string all = entries("/proc");
           std::size_t start = 0;
           while (start < all.size()) {
             std::size_t end = all.find(' ', start);
             if (end == std::string::npos) end = all.size();
             out.push_back(all.substr(start, end - start));
             start = end + 1;
           }
           return out;
         }()) {
      if (!name.empty() && std::all_of(name.begin(), name.end(), ::isdigit)) pids += " " + name;
    }
    std::printf("pids%s\n", pids.c_str());
    std::fflush(stdout);
    return 0;
  }
  if (cmd == "proc-status" && need(1)) {
    return say(open(("/proc/" + a[0] + "/status").c_str(), O_RDONLY | O_CLOEXEC));
  }
  // --- the pty
  if (cmd == "openpty") {
    // posix_openpt, grantpt, unlockpt (TIOCSPTLCK), ptsname (TIOCGPTN), the slave opened,
    // a byte through; both ends left open for pts-list.
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return say(-1);
    const char* name = ptsname(master);
    if (name == nullptr) return say(-1);
    int slave = open(name, O_RDWR | O_NOCTTY);
    if (slave < 0) return say(-1);
    if (write(master, "x\n", 2) != 2) return say(-1);
    char c = 0;
    if (read(slave, &c, 1) != 1 || c != 'x') return say(-1);
    return say(0);
  }
  if (cmd == "pts-list") {
    std::printf("pts %s\n", entries("/dev/pts").c_str());
    std::fflush(stdout);
    return 0;
  }
  // --- undoing them: each refused (the filter, else the missing capability)
  if (cmd == "umount" && need(1)) return say(umount2(a[0].c_str(), MNT_DETACH));
  if (cmd == "remount-exec" && need(1)) {
    return say(mount(nullptr, a[0].c_str(), nullptr, MS_REMOUNT | MS_BIND, nullptr));
  }
  if (cmd == "mount-setattr-exec" && need(1)) {
    struct mount_attr attr {};
    attr.attr_clr = MOUNT_ATTR_NOEXEC;
    return say(syscall(SYS_mount_setattr, AT_FDCWD, a[0].c_str(), 0, &attr, sizeof attr));
  }
  if (cmd == "mount-tmpfs" && need(1)) {
    return say(mount("tmpfs", a[0].c_str(), "tmpfs", 0, nullptr));
  }
  return -1;
}
