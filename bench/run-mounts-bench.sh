#!/usr/bin/env bash
# Issue 12: what a module's own mounts cost (docs/performance.md, "A module's world").
#   1. bench/mounts_cost.cpp: each mount on its own, medians of ROUNDS forked children, and
#      the module's exit with its namespace torn down.
#   2. bench/mounts_paired.py: paired rounds (the sides alternating, order flipped every
#      round) of a bare exec of /bin/true, sandbox-run of it with module_mounts false and
#      true, and bwrap --unshare-all --ro-bind / /; the medians, and the median per-round
#      cost of the mounts as a ratio to the bare exec.
#   bench/run-mounts-bench.sh [BUILD_DIR]     (root) default BUILD_DIR: build
#   ROUNDS=200 RT=1 (SCHED_FIFO 10; pinned to the last CPU in any case)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
rounds=${ROUNDS:-200}
prefix=(taskset -c "$(( $(nproc) - 1 ))")
[[ ${RT:-0} == 1 ]] && prefix+=(chrt -f 10)
tmp=$(mktemp -d /tmp/oarbank-mounts-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
mkdir "$tmp/work" && chown 65534:65534 "$tmp/work"
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -r) $(nproc) CPUs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
c++ -O2 -std=c++20 -o "$tmp/mounts_cost" "$root/bench/mounts_cost.cpp"
"${prefix[@]}" "$tmp/mounts_cost" "$tmp/work" "$rounds"
echo "{\"bundle\": \"/usr/bin\", \"work\": \"$tmp/work\", \"ipc_isolation\": \"best-effort\"}" > "$tmp/p.json"
echo '{"module_mounts": true}' > "$tmp/on.json"
echo '{"module_mounts": false}' > "$tmp/off.json"
chmod 644 "$tmp"/*.json
"${prefix[@]}" python3 "$root/bench/mounts_paired.py" "$build/oarbank-agent" "$tmp" "$rounds"
