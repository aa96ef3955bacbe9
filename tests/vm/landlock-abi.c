/* Prints this kernel's Landlock state, as the VM matrix checks it:
 *   a number   the ABI version (landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION))
 *   disabled   Landlock is built in but not enabled (EOPNOTSUPP: left out of lsm=)
 *   missing    the kernel has no Landlock at all (ENOSYS)
 *   error ERRNO anything else
 * Built static by run-kernel-matrix.sh (cc -static) so it runs in a bare initramfs.
 * Exit status: 0 when a number or disabled/missing was printed, 1 otherwise. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)

int main(void) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi >= 0) {
    printf("%ld\n", abi);
    return 0;
  }
  if (errno == EOPNOTSUPP) {
    puts("disabled");
    return 0;
  }
  if (errno == ENOSYS) {
    puts("missing");
    return 0;
  }
  printf("error %s\n", strerror(errno));
  return 1;
}
