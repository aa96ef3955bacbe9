#!/usr/bin/env bash
# Writes src/cli/launch-order.txt: the functions a launch runs, in the order first run, which the
# launch binary's link puts first and together (lld's --symbol-ordering-file; CMakeLists.txt).
# Why: a one-shot process pays a page fault (about 2.5 to 3 us here) for each 64 KiB window of
# its code it first touches, and the launch's code is about 600 functions (500 KiB) spread over
# 2.9 MiB of text, in 38 windows; ordered, 7 (docs/performance.md, "Where the launch binary's
# code lies").
#
#   bench/make-launch-order.sh [BUILD_DIR]     default BUILD_DIR: build-bench (Release, static)
#
# Root (sandbox-run's leaf, and ptrace). Traces, with bench/launch_trace.c, a bare sandbox-exec,
# and sandbox-run with and without the module's world; the functions of each in the order first
# run, the first trace's first. A stale order file is harmless: a function it names that is gone
# is skipped, and one it lacks is laid out after the ordered ones. Run it again after a change of
# the launch path, and commit the file.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
agent=$build/oarbank-agent
tracer=$build/bench/oarbank-launch-trace
out=$root/src/cli/launch-order.txt
for f in "$agent" "$tracer"; do
  [[ -x $f ]] || { echo "make-launch-order: $f is missing; build with: cmake -S $root -B $build -G Ninja -DOARBANK_TESTS=OFF -DCMAKE_BUILD_TYPE=Release && ninja -C $build" >&2; exit 1; }
done
[[ $(id -u) == 0 ]] || { echo "make-launch-order: run as root (sandbox-run makes a cgroup leaf)" >&2; exit 77; }

tmp=$(mktemp -d /tmp/oarbank-launch-order.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -m 700 "$tmp/state" "$tmp/registry"
export OARBANK_STATE_DIR=$tmp/state OARBANK_USER_REGISTRY=$tmp/registry
printf '%s\n' '{"bundle": "/usr/bin", "ipc_isolation": "best-effort"}' >"$tmp/policy.json"
printf '%s\n' '{"denial_audit": "off", "module_world": false, "module_mounts": false}' >"$tmp/no-world.json"
printf '%s\n' '{"denial_audit": "off"}' >"$tmp/world.json"

"$tracer" "$tmp/1" "$agent" sandbox-exec "$tmp/policy.json" -- /bin/true
"$tracer" "$tmp/2" "$agent" sandbox-run --config "$tmp/no-world.json" "$tmp/policy.json" -- /bin/true
"$tracer" "$tmp/3" "$agent" sandbox-run --config "$tmp/world.json" "$tmp/policy.json" -- /bin/true

# Each address in the binary's .text to the function that holds it (nm's symbols, sorted),
# each function once: the vDSO's addresses, and .plt's and .iplt's stubs, which have no symbol
# and would be given the one before them, are left out.
nm -n --defined-only "$agent" | awk '$2 ~ /^[tTwWiI]$/ {print $1, $3}' >"$tmp/symbols"
text=$(readelf -SW "$agent" | sed -n 's/.*\] \.text *PROGBITS *\([0-9a-f]*\) *[0-9a-f]* *\([0-9a-f]*\).*/\1 \2/p')
cat "$tmp/1" "$tmp/2" "$tmp/3" | python3 -c '
import bisect, sys
starts, names = [], []
for line in open(sys.argv[1]):
    address, name = line.split()
    starts.append(int(address, 16))
    names.append(name)
text_start, text_size = (int(x, 16) for x in sys.argv[2].split())
seen = set()
for line in sys.stdin:
    address = int(line, 16)
    if not text_start <= address < text_start + text_size:
        continue
    i = bisect.bisect_right(starts, address) - 1
    if i >= 0 and names[i] not in seen:
        seen.add(names[i])
        print(names[i])
' "$tmp/symbols" "$text" >"$tmp/order"
{
  echo "# The launch binary's link order (bench/make-launch-order.sh wrote it; do not edit)."
  cat "$tmp/order"
} >"$out"
echo "make-launch-order: $(wc -l <"$tmp/order") functions in $out"
