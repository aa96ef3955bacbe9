#!/usr/bin/env bash
# What sandbox-run adds to a launch (docs/performance.md): `sandbox-run POLICY -- /bin/true`
# against `sandbox-exec POLICY -- /bin/true` and a bare spawn of /bin/true, side by side in one
# run (oarbank-launch-bench: paired rounds, rotating order, medians). The container (a cgroup v2
# leaf when this process may make one: run as root) and the verification are the difference;
# the issue's target is under 2 ms at the median.
#
#   bench/run-run-bench.sh [BUILD_DIR]      default BUILD_DIR: build-bench
#   ROUNDS=300 WARMUP=30 CPU=1 bench/run-run-bench.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
agent=$build/oarbank-agent
driver=$build/bench/oarbank-launch-bench
rounds=${ROUNDS:-300}
warmup=${WARMUP:-30}
cpu=${CPU:-$(($(nproc) - 1))}
prefix=()
[[ $cpu != none ]] && prefix+=(taskset -c "$cpu")

for f in "$agent" "$driver"; do
  [[ -x $f ]] || { echo "run-run-bench: $f is missing; build with: cmake -S $root -B $build -G Ninja -DOARBANK_TESTS=OFF -DCMAKE_BUILD_TYPE=Release && ninja -C $build" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/oarbank-run-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
policy=$tmp/policy.json
echo '{"bundle": "/usr/bin", "ipc_isolation": "best-effort"}' >"$policy"
chmod 644 "$policy"
# The process-group side: a cgroup_parent that does not exist makes sandbox-run fall back.
pgroup_config=$tmp/pgroup.json
echo '{"cgroup_parent": "/oarbank-bench-no-such-cgroup"}' >"$pgroup_config"
export OARBANK_STATE_DIR=$tmp/state

echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -r) $(nproc) CPUs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== agent: $agent ($(stat -c %s "$agent") bytes); pinned to CPU: $cpu; euid $(id -u)"
"$agent" sandbox-run --id bench-check "$policy" -- /bin/true

"${prefix[@]}" "$driver" --agent "$agent" --policy "$policy" --target /bin/true \
  --rounds "$rounds" --warmup "$warmup" --no-bwrap --no-floor \
  --side "sandbox-run=$agent sandbox-run --id bench-a $policy -- /bin/true" \
  --side "sandbox-run-pgroup=$agent sandbox-run --config $pgroup_config --id bench-b $policy -- /bin/true" \
  2>/dev/null | tee "$tmp/out.txt"

# The difference that counts: median sandbox-run minus median sandbox-exec, wall and CPU.
awk '
  /^wall time/ { table = "wall" } /^CPU time/ { table = "cpu" }
  $1 == "sandbox-exec" || $1 == "sandbox-run" || $1 == "sandbox-run-pgroup" { median[table, $1] = $3 }
  END {
    for (t in seen) {}
    printf "\nADDED sandbox-run over sandbox-exec: wall %.2f ms, cpu %.2f ms (median); process group only: wall %.2f ms\n",
      (median["wall", "sandbox-run"] - median["wall", "sandbox-exec"]) / 1000,
      (median["cpu", "sandbox-run"] - median["cpu", "sandbox-exec"]) / 1000,
      (median["wall", "sandbox-run-pgroup"] - median["wall", "sandbox-exec"]) / 1000
  }' "$tmp/out.txt"
