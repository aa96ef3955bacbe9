#!/usr/bin/env bash
# Launch cost of `oarbank-agent sandbox-exec POLICY -- /bin/true` as a ratio to a bare spawn of
# /bin/true (docs/performance.md). Two measurements of the same pair:
#   1. oarbank-launch-bench: paired rounds, sides alternating, median of the per-round ratio
#      (the figure that counts); bwrap is a third side when it is installed.
#   2. hyperfine -N, as a cross-check with a tool everyone knows (each command in its own
#      block, so its ratio is more exposed to drift of the machine than the paired one).
#
#   bench/run-launch-bench.sh [BUILD_DIR]        default BUILD_DIR: build-bench
#   ROUNDS=300 WARMUP=30 HYPERFINE_RUNS=500 bench/run-launch-bench.sh
#   POLICY=my-policy.json bench/run-launch-bench.sh    (default: bundle /usr/bin, best-effort IPC)
#   CPU=1 bench/run-launch-bench.sh     pin everything to this CPU (default: the last one; CPU=none: no pinning)
#   RT=1 bench/run-launch-bench.sh      run at SCHED_FIFO priority 10 (root): other load on that CPU
#                                       no longer preempts the rounds; spreads are much narrower
#   RUN=0 bench/run-launch-bench.sh     without the sandbox-run side
#   KERNEL_FLOOR=1 bench/run-launch-bench.sh   (root, default policy) one more side: the kernel's
#                                       part of the launch alone (oarbank-kernel-floor: the same
#                                       system calls and filter, none of the launcher's own code),
#                                       and the same without the filter, the bounding-set drops
#                                       or Landlock (kf-no-seccomp, kf-no-capbset, kf-no-landlock)
#                                       and sandbox-run's kernel part (kernel-floor-run: the same
#                                       with the run's record, leaf, supervisor and teardown; see
#                                       WORLD=1's run-no-world beside it), and that without the
#                                       record or the leaf (kfr-no-record, kfr-no-leaf)
#   WORLD=1 bench/run-launch-bench.sh   (root) three more sandbox-run sides: without the module's
#                                       world, with it, and with it taken from a namespace stock
#                                       (docs/performance.md, "The namespace stock")
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
agent=$build/oarbank-agent
driver=$build/bench/oarbank-launch-bench
rounds=${ROUNDS:-300}
warmup=${WARMUP:-30}
hf_runs=${HYPERFINE_RUNS:-500}
target=${TARGET:-/bin/true}
cpu=${CPU:-$(( $(nproc) - 1 ))}
prefix=()
[[ $cpu != none ]] && prefix+=(taskset -c "$cpu")
[[ ${RT:-0} == 1 ]] && prefix+=(chrt -f 10)

for f in "$agent" "$driver"; do
  [[ -x $f ]] || { echo "run-launch-bench: $f is missing; build with: cmake -S $root -B $build -G Ninja -DOARBANK_TESTS=OFF -DCMAKE_BUILD_TYPE=Release && ninja -C $build" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/oarbank-launch-bench.XXXXXX)
stock_pid=
trap '[[ -n $stock_pid ]] && kill "$stock_pid" && wait "$stock_pid"; rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
# Every binary a side runs is a copy made here by cp, not the linker's output itself: on this
# build machine (kernel 6.18, ext4) exec of the file ld wrote ran 0.3 x a bare exec slower than a
# cp copy of it in the same directory, even after drop_caches (2026-12-01, docs/performance.md,
# "Method"), which once made the build tree's agent and floor look slower than copies in /tmp.
mkdir "$tmp/bin"
cp "$agent" "$tmp/bin/oarbank-agent"
[[ -x $(dirname "$agent")/oarbank-agent-full ]] && cp "$(dirname "$agent")/oarbank-agent-full" "$tmp/bin/"
agent=$tmp/bin/oarbank-agent
floor=$build/bench/oarbank-floor-exec
floor_args=()
if [[ -x $floor ]]; then
  cp "$floor" "$tmp/bin/oarbank-floor-exec"
  floor_args=(--floor "$tmp/bin/oarbank-floor-exec")
fi
policy=${POLICY:-}
if [[ -z $policy ]]; then
  policy=$tmp/policy.json
  echo '{"bundle": "/usr/bin", "ipc_isolation": "best-effort"}' > "$policy"
  chmod 644 "$policy"
fi

echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -r) $(nproc) CPUs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== agent: $agent ($(stat -c %s "$agent") bytes; oarbank-agent-full, for the other lines: $(stat -c %s "$(dirname "$agent")/oarbank-agent-full" 2>/dev/null || echo missing))"
echo "== policy: $(cat "$policy")"
echo "== pinned to CPU: $cpu; SCHED_FIFO: ${RT:-0}"
# Fail early, with the launcher's own message, if the launch does not work at all.
"$agent" sandbox-exec "$policy" -- "$target"

echo
echo "== paired rounds (oarbank-launch-bench)"
# sandbox-run as a side of the same rounds (RUN=0: without it): as root it makes a cgroup leaf
# (or falls back to a process group), verifies the launch and tears down, every round.
export OARBANK_STATE_DIR=$tmp/state
run_side=()
[[ ${RUN:-1} == 1 ]] && run_side=(--side "sandbox-run=$agent sandbox-run $policy -- $target")
if [[ ${KERNEL_FLOOR:-0} == 1 ]]; then
  [[ -z ${POLICY:-} ]] || { echo "run-launch-bench: KERNEL_FLOOR=1 models the default policy only" >&2; exit 1; }
  cp "$build/bench/oarbank-kernel-floor" "$tmp/bin/"
  run_side+=(--side "kernel-floor=$tmp/bin/oarbank-kernel-floor $policy $target")
  for step in seccomp capbset landlock; do
    run_side+=(--side "kf-no-$step=OARBANK_KERNEL_FLOOR_WITHOUT=$step $tmp/bin/oarbank-kernel-floor $policy $target")
  done
  # sandbox-run's kernel part (no world, no audit reader): compare with WORLD=1's run-no-world.
  cgroup2=/sys/fs/cgroup
  [[ $(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null) == cgroup2fs ]] && cgroup2=/sys/fs/cgroup/unified
  run_side+=(--side "kernel-floor-run=OARBANK_KERNEL_FLOOR_RUN=$cgroup2 OARBANK_STATE_DIR=$tmp/kf-state $tmp/bin/oarbank-kernel-floor $policy $target")
  for step in record leaf; do
    run_side+=(--side "kfr-no-$step=OARBANK_KERNEL_FLOOR_WITHOUT=$step OARBANK_KERNEL_FLOOR_RUN=$cgroup2 OARBANK_STATE_DIR=$tmp/kf-state $tmp/bin/oarbank-kernel-floor $policy $target")
  done
fi
if [[ ${WORLD:-0} == 1 ]]; then
  # The audit reader off in all three (it is its own cost: performance.md); the stock serves a
  # run state directory of its own, not pinned (on a node it is a service beside the runs), and
  # is stopped at the end.
  echo '{"denial_audit": "off", "module_world": false, "module_mounts": false}' > "$tmp/no-world.json"
  echo '{"denial_audit": "off"}' > "$tmp/world.json"
  chmod 644 "$tmp/no-world.json" "$tmp/world.json"
  OARBANK_STATE_DIR=$tmp/stock-state "$agent" sandbox-stock 2> "$tmp/stock.log" &
  stock_pid=$!
  for _ in $(seq 100); do grep -q ' serving ' "$tmp/stock.log" && break; sleep 0.05; done
  run_side+=(--side "run-no-world=$agent sandbox-run --config $tmp/no-world.json $policy -- $target"
             --side "run-world=$agent sandbox-run --config $tmp/world.json $policy -- $target"
             --side "run-world-stock=OARBANK_STATE_DIR=$tmp/stock-state $agent sandbox-run --config $tmp/world.json $policy -- $target")
fi
"${prefix[@]}" "$driver" --agent "$agent" --policy "$policy" --target "$target" --rounds "$rounds" --warmup "$warmup" \
  "${floor_args[@]}" --raw "$tmp/raw.csv" "${run_side[@]}"
[[ -n ${RAW_OUT:-} ]] && cp "$tmp/raw.csv" "$RAW_OUT"

if command -v hyperfine >/dev/null; then
  echo
  echo "== cross-check: hyperfine -N --warmup 50 --runs $hf_runs"
  "${prefix[@]}" hyperfine -N --warmup 50 --runs "$hf_runs" --export-json "$tmp/hf.json" \
    -n bare "$target" -n sandbox-exec "$agent sandbox-exec $policy -- $target"
  python3 - "$tmp/hf.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
b, s = r["bare"], r["sandbox-exec"]
print(f"hyperfine: median bare {b['median']*1e6:.0f} us, sandbox-exec {s['median']*1e6:.0f} us, "
      f"ratio of medians {s['median']/b['median']:.3f} (mean ratio {s['mean']/b['mean']:.3f})")
PY
else
  echo "hyperfine is not installed: cross-check skipped"
fi
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
