#include "apply/exec_failure.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>

#include "sys/shell_word.hpp"

namespace oarbank {

std::string exec_failure_detail(const std::string& executable, bool looked_up_on_path,
                                const std::string& module_path, int err) {
  const auto uid = static_cast<unsigned>(::geteuid());
  struct stat st {};
  const bool there = ::stat(executable.c_str(), &st) == 0;
  const int stat_err = there ? 0 : errno;
  if (err == ENOENT) {
    if (looked_up_on_path) {
      return fmt::format(
          "not found on the module's PATH ({}); name the program by its absolute path, or set "
          "PATH with --setenv",
          module_path);
    }
    // execve answers ENOENT too when the file is there but its interpreter (the #! line) or
    // its ELF program interpreter (the dynamic loader) is not.
    if (there && S_ISREG(st.st_mode)) {
      return "the file is there: its interpreter (the #! line) or its dynamic loader is missing";
    }
    return "";
  }
  if (err == EACCES) {
    if (!there && stat_err == EACCES) {
      return fmt::format(
          "a directory on the way to it cannot be searched by the module user (uid {})", uid);
    }
    if (!there) return "";
    if (S_ISDIR(st.st_mode)) return "it is a directory, not a program";
    if (!S_ISREG(st.st_mode)) return "it is not a regular file";
    if (::faccessat(AT_FDCWD, executable.c_str(), X_OK, AT_EACCESS) != 0 && errno == EACCES) {
      return fmt::format(
          "the file is not executable by the module user (uid {}; owner uid {}, mode {:04o}): "
          "chmod +x {}, or run it by its interpreter",
          uid, static_cast<unsigned>(st.st_uid), static_cast<unsigned>(st.st_mode & 07777),
          shell_word(executable));
    }
    struct statvfs fs {};
    if (::statvfs(executable.c_str(), &fs) == 0 && (fs.f_flag & ST_NOEXEC) != 0) {
      return "its filesystem is mounted noexec";
    }
    // The file's own permissions allow it: Landlock refused it (or the #! interpreter).
    return "refused by the sandbox (Landlock): a module executes only from bundle, runtime, "
           "tools and the base system, and from work, data and temp only with exec_writable";
  }
  // A file whose capabilities have the effective bit set (Debian's ping, cap_net_raw+ep) must
  // get every capability it names, or the kernel refuses it with EPERM (commoncap.c: "legacy
  // apps ... missing some forced capabilities"). Started as root, the launcher has emptied the
  // bounding set, so no capability can be granted. A bare EPERM says nothing: look for the
  // file's capabilities, after the failure only. Through a descriptor: the filter answers
  // getxattr by path EOPNOTSUPP (session 18), as it does the module's.
  if (err == EPERM) {
    const int fd = ::open(executable.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
      // An execute-only file (0711): its attributes cannot be read here.
      return "if the file asks for capabilities (security.capability, which cannot be read "
             "here: the file is not readable), a module cannot have them";
    }
    const bool capable = ::fgetxattr(fd, "security.capability", nullptr, 0) > 0;
    ::close(fd);
    if (capable) return "the file asks for capabilities (security.capability) a module cannot have";
  }
  // execve answers EAGAIN for one reason (fs/exec.c, Linux 3.1): the real uid was set while
  // its user already ran as many processes as RLIMIT_NPROC allows (sandbox-run sets the real uid
  // last, under the node's pids_max as the limit), and still does. Processes outside this run
  // hold the module's uid.
  if (err == EAGAIN) {
    rlimit limit{};
    const bool known = ::getrlimit(RLIMIT_NPROC, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
    return fmt::format(
        "the module's user (uid {0}) already runs as many processes as its process limit allows "
        "(RLIMIT_NPROC {1}: the node's pids_max, or the caller's limit); processes outside this "
        "run hold the uid (ps -u {0})",
        static_cast<unsigned>(::getuid()),
        known ? std::to_string(limit.rlim_cur) : std::string("unlimited"));
  }
  return "";
}

}  // namespace oarbank
