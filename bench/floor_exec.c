/* oarbank-floor-exec: the floor for any launcher (docs/performance.md). A static binary that sets
 * no_new_privs and execs its arguments: what every launcher pays at least, one more exec.
 * oarbank-launch-bench runs it as a side, so the launcher's ratio can be read against the floor
 * measured in the same run. */
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 2) {
    fputs("usage: oarbank-floor-exec PROGRAM [ARGS...]\n", stderr);
    return 64;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    perror("oarbank-floor-exec: prctl(PR_SET_NO_NEW_PRIVS)");
    return 70;
  }
  execve(argv[1], argv + 1, environ);
  perror("oarbank-floor-exec: execve");
  return 71;
}
