#include "apply/seccomp_apply.hpp"

#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "apply/seccomp_programs.hpp"

namespace oarbank {

int load_seccomp_filter(const seccomp::FilterVariant& variant) {
  const auto& program = seccomp::kPrograms[variant.index()];
  sock_fprog fprog{static_cast<unsigned short>(program.length),
                   const_cast<sock_filter*>(program.instructions)};
  // The launcher is single-threaded at this point, so no SECCOMP_FILTER_FLAG_TSYNC is needed.
  return ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) == 0 ? 0 : errno;
}

}  // namespace oarbank
