#!/usr/bin/env bash
# Per-syscall cost of the precompiled seccomp filters (docs/performance.md): getppid and a
# 1-byte read (verdict cached by the kernel), ioctl, socketpair and sendto (run the program),
# with no filter, a one-instruction allow-all filter, variant 0 and variant 2, alternating in
# one run (about 40 s).
#
#   bench/run-syscall-bench.sh [BUILD_DIR] [EXTRA ARGS...]     default BUILD_DIR: build-bench
#   ROUNDS=40 FILTERS=none,allow,0,2 MIN_TIME=0.02 bench/run-syscall-bench.sh
#   CPU=1 bench/run-syscall-bench.sh    pin the children to this CPU (default: the last one; CPU=none:
#                                       no pinning, much noisier when the other CPU's load moves around)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
shift || true
bench=$build/bench/oarbank-syscall-bench
[[ -x $bench ]] || { echo "run-syscall-bench: $bench is missing (needs Google Benchmark: apt-get install libbenchmark-dev)" >&2; exit 1; }

echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -r) $(nproc) CPUs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
cpu=${CPU:-$(( $(nproc) - 1 ))}
cpu_arg=()
[[ $cpu != none ]] && cpu_arg=(--cpu="$cpu")
echo "== pinned to CPU: $cpu"
"$bench" "${cpu_arg[@]}" --rounds="${ROUNDS:-40}" --filters="${FILTERS:-none,allow,0,2}" --benchmark_min_time="${MIN_TIME:-0.02}" "$@"
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
