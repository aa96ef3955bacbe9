/* oarbank-launch-trace: which instructions of the launch binary a launch runs, for its link order
 * (bench/make-launch-order.sh, docs/performance.md "Where the launch binary's code lies").
 *
 *   oarbank-launch-trace OUT PROGRAM [ARGS...]
 *
 * Runs PROGRAM under ptrace, single-stepping it and every process it forks, vforks or clones,
 * and writes to OUT each distinct instruction address that any of them ran while running
 * PROGRAM's image (the vDSO's too: bench/make-launch-order.sh keeps those in the image's text),
 * in the order first run, one hexadecimal address a line. A process is followed until it
 * execs another image (PROGRAM's own exec is the first). Single steps are slow (a few seconds for
 * one launch): a tool for the build's order file, never for timing. Needs ptrace rights over
 * PROGRAM (root, or the same user without Yama's restriction). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

/* Open addressing over 2^22 slots: a launch runs about 20,000 distinct addresses. */
#define SLOTS (1u << 22)
static uint64_t* slots;
static uint64_t* first_run;
static size_t first_run_count;

static void remember(uint64_t address) {
  uint64_t h = (address * 0x9E3779B97F4A7C15ull) >> 40;
  for (;; ++h) {
    uint64_t* slot = &slots[h & (SLOTS - 1)];
    if (*slot == address) return;
    if (*slot == 0) {
      *slot = address;
      if (first_run_count < SLOTS) first_run[first_run_count++] = address;
      return;
    }
  }
}

/* The processes followed; a process's exec of another image ends its tracing. */
#define MAX_TRACED 64
static pid_t traced[MAX_TRACED];

static int slot_of(pid_t pid) {
  for (int i = 0; i < MAX_TRACED; ++i) {
    if (traced[i] == pid) return i;
  }
  return -1;
}

static void follow(pid_t pid) {
  if (slot_of(pid) >= 0) return;
  for (int i = 0; i < MAX_TRACED; ++i) {
    if (traced[i] == 0) {
      traced[i] = pid;
      return;
    }
  }
  fprintf(stderr, "oarbank-launch-trace: more than %d processes\n", MAX_TRACED);
}

static void forget(pid_t pid) {
  int i = slot_of(pid);
  if (i >= 0) traced[i] = 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fputs("usage: oarbank-launch-trace OUT PROGRAM [ARGS...]\n", stderr);
    return 64;
  }
  slots = calloc(SLOTS, sizeof *slots);
  first_run = calloc(SLOTS, sizeof *first_run);
  if (slots == NULL || first_run == NULL) return 71;

  pid_t root = fork();
  if (root < 0) return 71;
  if (root == 0) {
    /* Untraced, the SIGSTOP below would stop it for good, and this tracer wait forever. */
    if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0) _exit(126);
    raise(SIGSTOP);
    execv(argv[2], argv + 2);
    _exit(127);
  }
  int status = 0;
  if (waitpid(root, &status, 0) != root) return 71;
  const long options = PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
                       PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL;
  ptrace(PTRACE_SETOPTIONS, root, 0, options);
  /* The root runs untraced up to its exec of PROGRAM, then is stepped. */
  ptrace(PTRACE_CONT, root, 0, 0);
  int root_exec_seen = 0;
  unsigned long steps = 0;

  for (;;) {
    pid_t pid = waitpid(-1, &status, __WALL);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break; /* ECHILD: nothing left */
    }
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
      forget(pid);
      continue;
    }
    if (!WIFSTOPPED(status)) continue;
    const int event = status >> 16;
    const int signal = WSTOPSIG(status);
    if (event == PTRACE_EVENT_EXEC) {
      if (pid == root && !root_exec_seen) {
        root_exec_seen = 1;
        follow(root);
        /* Its entry point, where it stopped: the first instruction it will run. */
        struct user_regs_struct regs;
        if (ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0) remember(regs.rip);
        ptrace(PTRACE_SINGLESTEP, pid, 0, 0);
      } else {
        /* Another image (the module, or the launcher's other binary): no longer ours. */
        forget(pid);
        ptrace(PTRACE_DETACH, pid, 0, 0);
      }
      continue;
    }
    if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK || event == PTRACE_EVENT_CLONE) {
      unsigned long child = 0;
      ptrace(PTRACE_GETEVENTMSG, pid, 0, &child);
      follow((pid_t)child);
      ptrace(PTRACE_SINGLESTEP, pid, 0, 0);
      continue;
    }
    if (slot_of(pid) < 0) {
      /* A new child's first stop can come before its parent's event. */
      follow(pid);
    }
    if (signal == SIGTRAP) {
      struct user_regs_struct regs;
      if (ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0) {
        remember(regs.rip);
        ++steps;
      }
      ptrace(PTRACE_SINGLESTEP, pid, 0, 0);
    } else if (signal == SIGSTOP) {
      ptrace(PTRACE_SINGLESTEP, pid, 0, 0);
    } else {
      ptrace(PTRACE_SINGLESTEP, pid, 0, signal);
    }
  }

  FILE* out = fopen(argv[1], "w");
  if (out == NULL) {
    perror("oarbank-launch-trace: OUT");
    return 73;
  }
  for (size_t i = 0; i < first_run_count; ++i)
    fprintf(out, "%llx\n", (unsigned long long)first_run[i]);
  if (fclose(out) != 0) return 74;
  fprintf(stderr, "oarbank-launch-trace: %lu steps, %zu distinct addresses\n", steps,
          first_run_count);
  return 0;
}
