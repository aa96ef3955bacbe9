#!/usr/bin/env bash
# The launch of `oarbank-agent sandbox-exec POLICY -- /bin/true`, step by step
# (docs/performance.md, "The launch, step by step"): N launches under `perf record` on a few
# syscall tracepoints that mark where each step begins, with the floor (oarbank-floor-exec)
# and a bare /bin/true traced the same way in between, in turn. No instrumented build: the
# markers are syscalls each step makes first (below); about 40 events are recorded per launch
# (17 of them openat2), and the step times include their cost.
#
#   bench/run-launch-steps.sh [BUILD_DIR]       default BUILD_DIR: build-bench
#   N=300 RT=1 CPU=1 POLICY=file.json bench/run-launch-steps.sh
#
# The markers (src/apply/launch.cpp's order; update them with it):
#   execve enter / exit          the kernel's exec of the launcher
#   first fcntl(F_GETFD)         main() has started (apply/descriptors: 0, 1 and 2 open?)
#   uname                        the node configuration and the policy are parsed; the probe starts
#   first openat2                the probe is done; the plan opens the policy's paths (Landlock)
#   setgroups                    the ruleset is built, the launch prepared; identity starts
#   fchdir                       identity is done; chdir, no_new_privs, landlock_restrict_self
#   seccomp(SET_MODE_FILTER)     enter / exit: the filter's load
#   execve enter / exit          the kernel's exec of the module; then the module until it exits
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
agent=$build/oarbank-agent
floor=$build/bench/oarbank-floor-exec
n=${N:-300}
cpu=${CPU:-$(($(nproc) - 1))}
prefix=()
[[ $cpu != none ]] && prefix+=(taskset -c "$cpu")
[[ ${RT:-0} == 1 ]] && prefix+=(chrt -f 10)
command -v perf >/dev/null || { echo "run-launch-steps: perf is not installed (linux-perf)" >&2; exit 1; }
for f in "$agent" "$floor"; do
  [[ -x $f ]] || { echo "run-launch-steps: $f is missing (ninja -C $build oarbank-agent oarbank-floor-exec)" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/oarbank-launch-steps.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
policy=${POLICY:-}
if [[ -z $policy ]]; then
  policy=$tmp/policy.json
  echo '{"bundle": "/usr/bin", "ipc_isolation": "best-effort"}' >"$policy"
  chmod 644 "$policy"
fi
"$agent" sandbox-exec "$policy" -- /bin/true

events=syscalls:sys_enter_execve,syscalls:sys_exit_execve,syscalls:sys_enter_fcntl
events+=,syscalls:sys_enter_newuname,syscalls:sys_enter_openat2,syscalls:sys_enter_setgroups
events+=,syscalls:sys_enter_fchdir,syscalls:sys_enter_seccomp,syscalls:sys_exit_seccomp
events+=,sched:sched_process_exit
cat >"$tmp/loop.sh" <<LOOP
for i in \$(seq $n); do
  "$agent" sandbox-exec "$policy" -- /bin/true
  "$floor" /bin/true
  /bin/true
done
LOOP
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -r); load average: $(cut -d' ' -f1-3 /proc/loadavg); $n launches of each; CPU $cpu; SCHED_FIFO ${RT:-0}"
"${prefix[@]}" perf record -q -e "$events" -o "$tmp/perf.data" -- bash "$tmp/loop.sh" >/dev/null
perf script -i "$tmp/perf.data" -F pid,time,event,trace 2>/dev/null >"$tmp/events.txt"
python3 - "$tmp/events.txt" <<'PY'
import collections, statistics, sys
by_pid = collections.defaultdict(list)
for line in open(sys.argv[1]):
    parts = line.split(None, 3)
    if len(parts) < 3: continue
    pid, t, ev = parts[0], float(parts[1].rstrip(':')) * 1e6, parts[2].rstrip(':').split(':')[-1]
    by_pid[pid].append((t, ev, parts[3] if len(parts) > 3 else ''))
def first(evs, name, after=0.0, pred=lambda a: True):
    for t, e, a in evs:
        if e == name and t >= after and pred(a): return t
    return None
steps = collections.defaultdict(list)
for pid, evs in by_pid.items():
    execs = [t for t, e, a in evs if e == 'sys_enter_execve']
    exits = [t for t, e, a in evs if e == 'sys_exit_execve']
    end = first(evs, 'sched_process_exit')
    if len(execs) < 1 or end is None: continue
    main = first(evs, 'sys_enter_fcntl')
    if len(execs) == 2 and main is not None:  # the launcher
        t = dict(exec=execs[0], execd=exits[0], main=main, probe=first(evs, 'sys_enter_newuname'),
                 paths=first(evs, 'sys_enter_openat2'), ident=first(evs, 'sys_enter_setgroups'),
                 nnp=first(evs, 'sys_enter_fchdir'),
                 sc=first(evs, 'sys_enter_seccomp', pred=lambda a: 'op: 0x00000001' in a),
                 exec2=execs[1], exec2d=exits[1], end=end)
        if None in t.values(): continue
        t['scd'] = first(evs, 'sys_exit_seccomp', after=t['sc'])
        for name, a, b in [('1 execve of the launcher (kernel)', 'exec', 'execd'),
                           ('2 glibc start-up, static constructors', 'execd', 'main'),
                           ('3 parse: node configuration, policy (read, strict JSON)', 'main', 'probe'),
                           ('4 probe', 'probe', 'paths'),
                           ('5 plan: open the paths, Landlock ruleset and rules, prepare', 'paths', 'ident'),
                           ('6 identity (groups, 41 capbset drops, setres*, capset)', 'ident', 'nnp'),
                           ('7 chdir, no_new_privs, landlock_restrict_self', 'nnp', 'sc'),
                           ('8 seccomp filter load', 'sc', 'scd'),
                           ('9 execve of the module (kernel)', 'exec2', 'exec2d'),
                           ('A the module (/bin/true) until it exits', 'exec2d', 'end'),
                           ('  total, launcher execve to exit', 'exec', 'end'),
                           ('  the launcher itself (execve to the module\'s execve)', 'exec', 'exec2')]:
            steps['sandbox-exec', name].append(t[b] - t[a])
    elif len(execs) == 2:  # the floor
        steps['floor', '1 execve of the floor (kernel)'].append(exits[0] - execs[0])
        steps['floor', '2 floor: start-up, no_new_privs'].append(execs[1] - exits[0])
        steps['floor', '9 execve of the module (kernel)'].append(exits[1] - execs[1])
        steps['floor', 'A the module until it exits'].append(end - exits[1])
        steps['floor', '  total'].append(end - execs[0])
    elif len(execs) == 1:  # bare /bin/true
        steps['bare', '9 execve (kernel)'].append(exits[0] - execs[0])
        steps['bare', 'A /bin/true until it exits'].append(end - exits[0])
        steps['bare', '  total'].append(end - execs[0])
print(f"{'side':13} {'step':62} {'median us':>9} {'p10':>7} {'p90':>7}  n")
for (side, name), v in sorted(steps.items()):
    v.sort()
    q = lambda p: v[min(len(v) - 1, int(p * len(v)))]
    print(f"{side:13} {name:62} {statistics.median(v):9.1f} {q(0.1):7.1f} {q(0.9):7.1f}  {len(v)}")
PY
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
