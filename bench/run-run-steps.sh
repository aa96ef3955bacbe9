#!/usr/bin/env bash
# What `oarbank-agent sandbox-run --config CONFIG POLICY -- /bin/true` does beyond sandbox-exec,
# step by step (docs/performance.md, "What sandbox-run adds, step by step"): N runs of each
# agent given, in turn, under `perf record` on a few syscall tracepoints that mark where each
# step begins (no instrumented build). Give two agents (before, after) to compare them in the
# same rounds. As root (a cgroup leaf). About 30 events are recorded per run; the step times
# include their cost.
#
#   bench/run-run-steps.sh AGENT [AGENT...]
#   N=150 CPU=1 RT=1 CONFIG=node.json POLICY=policy.json bench/run-run-steps.sh A B
#   STATE=/dev/shm/DIR bench/run-run-steps.sh A B   (the run state directory; default: one in
#   /tmp, which on a journal-less ext4 pays for every record's inode: docs/performance.md)
#   (default CONFIG: {"denial_audit":"off","module_world":false,"module_mounts":false}, which
#   leaves out issue 12's world and the audit reader)
#
# The markers (supervise/module_run.cpp's and supervisor.cpp's order; update them with it):
#   execve enter / exit         the kernel's exec of the agent
#   first fcntl                 main() has started (apply/descriptors)
#   first rt_sigprocmask(BLOCK) ModuleRun::run(): the stop signals are held
#   getdents64                  the stale-run sweep of the state directory
#   access                      the cgroup place is found (mount, /proc/self/cgroup)
#   flock / linkat              the run record is claimed / linked
#   mkdir enter / exit          the leaf
#   uname                       the probe; signalfd4: the supervision starts; clone3: the spawn
#   the child's setpgid         its first syscall; its execve: the module's
#   rmdir enter / exit          the leaf's removal; unlinkat: the record's; exit_group
set -euo pipefail
(( $# >= 1 )) || { echo "usage: run-run-steps.sh AGENT [AGENT...]" >&2; exit 64; }
command -v perf >/dev/null || { echo "run-run-steps: perf is not installed (linux-perf)" >&2; exit 1; }
n=${N:-150}
cpu=${CPU:-$(($(nproc) - 1))}
prefix=()
[[ $cpu != none ]] && prefix+=(taskset -c "$cpu")
[[ ${RT:-0} == 1 ]] && prefix+=(chrt -f 10)
tmp=$(mktemp -d /tmp/oarbank-run-steps.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
policy=${POLICY:-$tmp/policy.json}
config=${CONFIG:-$tmp/config.json}
[[ -n ${POLICY:-} ]] || echo '{"bundle": "/usr/bin", "ipc_isolation": "best-effort"}' >"$policy"
[[ -n ${CONFIG:-} ]] || echo '{"denial_audit":"off","module_world":false,"module_mounts":false}' >"$config"
chmod 644 "$policy" "$config"
export OARBANK_STATE_DIR=${STATE:-$tmp/state} OARBANK_USER_REGISTRY=$tmp/registry
for a in "$@"; do "$a" sandbox-run --config "$config" "$policy" -- /bin/true; done

ev=syscalls:sys_enter_execve,syscalls:sys_exit_execve,syscalls:sys_enter_fcntl,syscalls:sys_enter_rt_sigprocmask
ev+=,syscalls:sys_enter_getdents64,syscalls:sys_enter_flock,syscalls:sys_enter_access,syscalls:sys_enter_linkat
ev+=,syscalls:sys_enter_mkdir,syscalls:sys_exit_mkdir,syscalls:sys_enter_newuname,syscalls:sys_enter_signalfd4
ev+=,syscalls:sys_enter_clone3,syscalls:sys_exit_clone3,syscalls:sys_enter_setpgid,syscalls:sys_enter_rmdir
ev+=,syscalls:sys_exit_rmdir,syscalls:sys_enter_exit_group,sched:sched_process_exit,syscalls:sys_enter_unlinkat
{
  echo "for i in \$(seq $n); do"
  for a in "$@"; do echo "  '$a' sandbox-run --config '$config' '$policy' -- /bin/true"; done
  echo "done"
} >"$tmp/loop.sh"
echo "== state directory $OARBANK_STATE_DIR ($(stat -f -c %T "$(dirname "$OARBANK_STATE_DIR")"))"
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -r); load average: $(cut -d' ' -f1-3 /proc/loadavg); $n runs of each; CPU $cpu; SCHED_FIFO ${RT:-0}"
# Per CPU (-C), not per task: a per-task recording is inherited by every new task, and copying
# its ~20 events into each child made clone3 -> the child's first syscall look like 240 to
# 290 µs where it takes about 20 (bench/clone_cost.c, docs/performance.md). Other tasks on
# that CPU are recorded too; the script keeps the agents' pids.
scope=(-a)
[[ $cpu != none ]] && scope=(-C "$cpu")
"${prefix[@]}" perf record -q "${scope[@]}" -e "$ev" -o "$tmp/perf.data" -- bash "$tmp/loop.sh" >/dev/null
perf script -i "$tmp/perf.data" -F pid,tid,time,event,trace 2>/dev/null >"$tmp/events.txt"
python3 - "$tmp/events.txt" "$@" <<'PY'
import collections, statistics, sys
evs_by = collections.defaultdict(list)  # pid -> [(t, tid, ev, args)]
for line in open(sys.argv[1]):
    p = line.split(None, 3)
    if len(p) < 3: continue
    pid, tid = p[0].split('/')
    t = float(p[1].rstrip(':')) * 1e6
    ev = p[2].rstrip(':').split(':')[-1]
    evs_by[int(pid)].append((t, int(tid), ev, p[3] if len(p) > 3 else ''))
agents = sys.argv[2:]
def first(evs, name, after, pred=lambda a: True, tid=None):
    for t, ti, e, a in evs:
        if e == name and t >= after and pred(a) and (tid is None or ti == tid): return t, a
    return None, None
runs = []
for pid, evs in evs_by.items():
    if not any(e == 'sys_enter_linkat' for _, _, e, _ in evs): continue
    runs.append((evs[0][0], pid))
runs.sort()
steps = collections.defaultdict(list)
order = []
for i, (_, pid) in enumerate(runs):
    side = agents[i % len(agents)].split('/')[-3] if len(agents) > 1 else 'agent'
    side = f"{i % len(agents)}:{side}"
    evs = evs_by[pid]
    m = {}
    m['exec'], _ = first(evs, 'sys_enter_execve', 0)
    m['execd'], _ = first(evs, 'sys_exit_execve', m['exec'])
    m['main'], _ = first(evs, 'sys_enter_fcntl', m['execd'])
    m['run'], _ = first(evs, 'sys_enter_rt_sigprocmask', m['main'], lambda a: a.startswith('how: 0x00000000, nset: 0x7'))
    m['walk'], _ = first(evs, 'sys_enter_getdents64', m['run'])
    m['access'], _ = first(evs, 'sys_enter_access', m['walk'])
    m['flock'], _ = first(evs, 'sys_enter_flock', m['access'])
    m['linkat'], _ = first(evs, 'sys_enter_linkat', m['flock'])
    m['mkdir'], _ = first(evs, 'sys_enter_mkdir', m['linkat'])
    m['mkdird'], _ = first(evs, 'sys_exit_mkdir', m['mkdir'])
    m['uname'], _ = first(evs, 'sys_enter_newuname', m['mkdird'])
    m['signalfd'], _ = first(evs, 'sys_enter_signalfd4', m['uname'])
    m['clone'], _ = first(evs, 'sys_enter_clone3', m['signalfd'])
    cd, ret = first(evs, 'sys_exit_clone3', m['clone'], tid=pid)
    if None in m.values() or ret is None: continue
    child = int(ret.strip(), 16)
    cev = evs_by.get(child, [])
    m['child'], _ = first(cev, 'sys_enter_setpgid', 0)
    m['mexec'], _ = first(cev, 'sys_enter_execve', 0)
    m['mexecd'], _ = first(cev, 'sys_exit_execve', 0)
    m['mexit'], _ = first(cev, 'sched_process_exit', 0)
    m['clonert'] = cd
    if None in m.values(): continue
    m['rmdir'], _ = first(evs, 'sys_enter_rmdir', m['mexit'])
    m['rmdird'], _ = first(evs, 'sys_exit_rmdir', m['rmdir'] or 0)
    m['unlink'], _ = first(evs, 'sys_enter_unlinkat', m['rmdird'] or 0)
    m['exitg'], _ = first(evs, 'sys_enter_exit_group', m['unlink'] or 0, tid=pid)
    m['end'], _ = first(evs, 'sched_process_exit', m['exitg'] or 0, lambda a: 'group_dead=true' in a)
    if None in m.values(): continue
    seq = [('execve of the agent (kernel)', 'exec', 'execd'), ('start-up to main', 'execd', 'main'),
           ('main -> run() (parse config, policy)', 'main', 'run'),
           ('run() -> stale-run walk (path forms, state dir walk)', 'run', 'walk'),
           ('walk -> access (walk, mountinfo, /proc/self/cgroup)', 'walk', 'access'),
           ('access -> flock (stat, state dir walk, O_TMPFILE)', 'access', 'flock'),
           ('flock -> linkat (write)', 'flock', 'linkat'),
           ('linkat -> mkdir (write, status, controllers)', 'linkat', 'mkdir'),
           ('mkdir (kernel)', 'mkdir', 'mkdird'),
           ('mkdir -> probe (open leaf, limits)', 'mkdird', 'uname'),
           ('probe -> signalfd (probe, plan, prepare)', 'uname', 'signalfd'),
           ('signalfd -> clone3', 'signalfd', 'clone'),
           ('clone3 -> child first syscall', 'clone', 'child'),
           ('child: record, identity, LL, seccomp -> execve', 'child', 'mexec'),
           ('execve of the module (kernel)', 'mexec', 'mexecd'),
           ('module runs to exit', 'mexecd', 'mexit'),
           ('(parent: clone3 returns after child exec)', 'clone', 'clonert'),
           ('module exit -> rmdir', 'mexit', 'rmdir'),
           ('rmdir (kernel)', 'rmdir', 'rmdird'),
           ('rmdir -> record unlink', 'rmdird', 'unlink'),
           ('unlink -> exit_group', 'unlink', 'exitg'),
           ('exit_group -> process exit', 'exitg', 'end'),
           ('main -> mkdir', 'main', 'mkdir'),
           ('total execve -> exit', 'exec', 'end')]
    for name, a, b in seq:
        steps[(name, side)].append(m[b] - m[a])
        if name not in order: order.append(name)
sides = sorted({s for _, s in steps})
print(f"{'step':55}" + ''.join(f"{s[:22]:>24}" for s in sides))
for name in order:
    row = f"{name:55}"
    for s in sides:
        v = sorted(steps.get((name, s), []))
        if not v: row += f"{'-':>24}"; continue
        row += f"{statistics.median(v):10.1f} [{v[len(v)//10]:5.0f},{v[9*len(v)//10]:5.0f}]"
    print(row)
print('n =', {s: len(steps[(order[0], s)]) for s in sides})
PY
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
