#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in build-fuzz and fuzzes the policy,
# node configuration and egress parsers for SECONDS (default 60), starting from fuzz/corpus,
# and at the same time the egress proxy's HTTP parsers, and the proxy's framing against llhttp's
# (differential), for as long (each fuzzer is one process: together they take SECONDS, not three
# times that).
# Exits non-zero on a finding (a crash, a sanitizer report, an unexpected exception, a broken
# round trip); the reproducer is left in build-fuzz/findings/.
#
#   scripts/run-fuzz.sh [SECONDS]
#   scripts/run-fuzz.sh --build   only builds (scripts/test.sh builds behind other tests)
#   OARBANK_FUZZ_JOBS=N   parallel fuzzing processes (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
if [[ ${1:-} == --build ]]; then
  build_only=1
  shift
fi
seconds=${1:-60}
if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "usage: $0 [--build] [SECONDS]" >&2
  exit 64
fi
jobs=${OARBANK_FUZZ_JOBS:-1}
build=build-fuzz

cc=${CC_FUZZ:-clang}
cxx=${CXX_FUZZ:-clang++}
command -v "$cxx" >/dev/null || { echo "$0: $cxx not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 69; }

cmake -S . -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DOARBANK_FUZZ=ON -DOARBANK_STATIC=OFF -DOARBANK_TESTS=OFF -DOARBANK_BENCH=OFF >/dev/null
ninja -C "$build" oarbank-policy-fuzz oarbank-proxy-request-fuzz oarbank-proxy-llhttp-fuzz
((build_only == 0)) || exit 0

# The working corpus grows in the build directory; fuzz/corpus (the seeds) is only read.
corpus=$build/corpus
findings=$build/findings
mkdir -p "$corpus" "$findings"
cat >"$build/policy.dict" <<'DICT'
"\"version\""
"\"bundle\""
"\"runtime\""
"\"tools\""
"\"work\""
"\"data\""
"\"temp\""
"\"exec_writable\""
"\"net\""
"\"egress\""
"\"broker\""
"\"devices\""
"\"gpu\""
"\"reservations\""
"\"cpu\""
"\"memory\""
"\"ipc_isolation\""
"\"none\""
"\"egress-allowlist\""
"\"egress-any\""
"\"compute\""
"\"required\""
"\"best-effort\""
"\"module_user\""
"\"uid\""
"\"gid\""
"\"proxy_listen\""
"\"broker_socket\""
"\"hard_limits\""
"\"pids_max\""
"\"cgroup_parent\""
"\"landlock_abi_max\""
"Ki"
"Mi"
"Gi"
"*."
":443"
"[::1]"
"\\u0000"
"/../"
"//"
"true"
"false"
"null"
"1e400"
"18446744073709551615"
DICT

# The egress proxy's parsers (fuzz/proxy.cmake); the first byte of an input picks the parser.
mkdir -p "$build/proxy-corpus"
printf '\000CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n' >"$build/proxy-corpus/seed-connect"
printf '\000POST http://example.com/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' >"$build/proxy-corpus/seed-forward"
printf '\001HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok' >"$build/proxy-corpus/seed-response"
printf '\003[::ffff:127.0.0.1]:80' >"$build/proxy-corpus/seed-authority"
# The differential fuzzer's seeds: requests as they come, no selector byte.
mkdir -p "$build/llhttp-corpus"
printf 'POST http://example.com/a HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0\r\nX-Sum: 1\r\n\r\nGET /' >"$build/llhttp-corpus/seed-chunked"
printf 'PUT http://example.com/a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\n\r\n' >"$build/llhttp-corpus/seed-length"
printf 'CONNECT example.com:443 HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n\r\n\026\003\001' >"$build/llhttp-corpus/seed-connect"
# What it found while the proxy's framing was made as strict (docs/proxy.md), as seeds.
printf 'POST http://e.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0; e.com\r\nX: 1\r\n\r\n' >"$build/llhttp-corpus/seed-ext-space"
printf 'POST http://e.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\t\r\n\r\n0\r\n\r\n' >"$build/llhttp-corpus/seed-te-tab"
printf 'POST http://e.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;a=b;c\r\nx\r\n0\r\n\r\n' >"$build/llhttp-corpus/seed-ext-after-token"

log=$build/fuzz.log
parallel=()
if ((jobs > 1)); then parallel=(-jobs="$jobs" -workers="$jobs"); fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
"$build/fuzz/oarbank-policy-fuzz" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
  -dict="$build/policy.dict" -artifact_prefix="$findings/" -print_final_stats=1 \
  "${parallel[@]}" \
  "$corpus" fuzz/corpus >"$log.policy" 2>&1 &
policy_pid=$!

# The egress proxy's parsers, alongside.
"$build/fuzz/oarbank-proxy-request-fuzz" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
  -artifact_prefix="$findings/" -print_final_stats=1 \
  "$build/proxy-corpus" >"$log.proxy" 2>&1 &
proxy_pid=$!

# The proxy's framing against llhttp's, alongside.
"$build/fuzz/oarbank-proxy-llhttp-fuzz" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
  -artifact_prefix="$findings/" -print_final_stats=1 \
  "$build/llhttp-corpus" >"$log.llhttp" 2>&1 &
llhttp_pid=$!

status=0 policy_status=0 proxy_status=0 llhttp_status=0
wait "$policy_pid" || policy_status=$?
wait "$proxy_pid" || proxy_status=$?
wait "$llhttp_pid" || llhttp_status=$?
if ((llhttp_status != 0 && proxy_status == 0)); then
  proxy_status=$llhttp_status
  cat "$log.llhttp" >>"$log.proxy"
else
  cat "$log.llhttp" >>"$log.policy"
fi
rm -f "$log.llhttp"
if ((jobs > 1)); then cat fuzz-*.log >>"$log.policy" 2>/dev/null && rm -f fuzz-*.log; fi
# The failing fuzzer's output last, where the tail below shows it.
if ((policy_status != 0)); then
  status=$policy_status
  cat "$log.proxy" "$log.policy" >"$log"
else
  status=$proxy_status
  cat "$log.policy" "$log.proxy" >"$log"
fi
rm -f "$log.policy" "$log.proxy"

if ((status != 0)) || ls "$findings"/* >/dev/null 2>&1; then
  tail -n 60 "$log" >&2
  echo "$0: FINDING: see $log and $findings/" >&2
  ls -l "$findings" >&2 || true
  exit 1
fi
grep -E '^stat::number_of_executed_units' "$log" | awk '{s += $2} END {if (NR) print "executions: " s}' || true
echo "$0: no finding in ${seconds}s"
