#!/usr/bin/env bash
# The egress proxy against a direct connection, with squid and tinyproxy as sides of the same
# run (docs/performance.md, "Egress proxy"). Needs root (a network namespace and a veth pair).
#
#   bench/run-proxy-bench.sh [BUILD_DIR]          default BUILD_DIR: build-bench
#   BULK_MIB=256 ROUNDS=7 LAT_ROUNDS=200 IDLE=1000 bench/run-proxy-bench.sh
#   CASES="veth loopback" TESTS=bulk,latency,idle   which cases and measurements
#   REF=0           leave out the two reference relays (ref-splice, ref-copy)
#   WAIT_LOAD=1.5   first wait (at most 5 minutes) for the 1-minute load average to drop below 1.5
#
# Two cases, every side measured in the same rounds:
#   veth      the upstream server runs in a network namespace of its own, at 198.51.100.10,
#             behind a veth pair (root side 198.51.100.1/24). Sides: direct; ours =
#             `oarbank-agent egress-proxy` (the production command, default limits); ours-lib =
#             the same ProxyServer hosted by the driver with raised tunnel limits; squid; tinyproxy.
#   loopback  the upstream server on 127.0.0.1. The production proxy always refuses 127.0.0.0/8,
#             so "ours" is absent here and ours-lib (the driver hosting ProxyServer in a process
#             of its own, with TestingOnlyExemptions for 127.0.0.0/8) stands for it.
# Two reference relays (the driver's `relay` mode: a thread per direction, blocking splice(2),
# or read/write through 64 KiB) are sides of bulk and latency: what this host allows any relay.
# All proxies listen on 127.0.0.1 in the root namespace; the client (the driver) runs there too.
# Traffic goes only to 127.0.0.1 and to 198.51.100.10 in the namespace this script creates.
# Everything started here is stopped by the EXIT trap; the namespace and veth are deleted.
#
# Packages: squid tinyproxy (apt-get install squid tinyproxy); a missing one is skipped as a side.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
agent=$build/oarbank-agent
driver=
for d in "$build/bench/oarbank-proxy-bench" "$build/oarbank-proxy-bench"; do
  [[ -x $d ]] && { driver=$d; break; }
done
bulk_mib=${BULK_MIB:-256}
rounds=${ROUNDS:-7}
lat_rounds=${LAT_ROUNDS:-200}
idle=${IDLE:-1000}
cases=${CASES:-veth loopback}
tests=${TESTS:-bulk,latency,idle}
max_seconds=${MAX_SECONDS:-1200}

[[ $(id -u) == 0 ]] || { echo "run-proxy-bench: needs root (network namespace, veth)" >&2; exit 1; }
[[ -x $agent ]] || { echo "run-proxy-bench: $agent is missing; build with: cmake -S $root -B $build -G Ninja -DOARBANK_TESTS=OFF -DCMAKE_BUILD_TYPE=Release && ninja -C $build" >&2; exit 1; }
[[ -n $driver ]] || { echo "run-proxy-bench: oarbank-proxy-bench is missing in $build (bench/proxy.cmake)" >&2; exit 1; }

# Addresses and ports. Upstream: 198.51.100.10:5001 in the namespace, 127.0.0.1:5002 here.
ns=oarbank-pbench-$$
veth_root=pbr$$
veth_ns=pbn$$
up_veth=198.51.100.10:5001
up_lo=127.0.0.1:5002
port_ours=13128
port_lib=13129
port_squid=13130
port_tiny=13131
port_ref_splice=13132
port_ref_copy=13133

tmp=$(mktemp -d /tmp/oarbank-proxy-bench.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
  set +e
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  ip netns del "$ns" 2>/dev/null
  ip link del "$veth_root" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# At most 1000 idle tunnels per proxy: 2 descriptors each in the proxy, 1 in the driver.
ulimit -n "$(ulimit -Hn)"

# Wait (bounded) until a TCP port accepts connections.
wait_port() {
  local hostport=$1 what=$2
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/${hostport%:*}/${hostport#*:}") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "run-proxy-bench: $what did not start listening on $hostport" >&2
  return 1
}
wait_port_ns() {
  for _ in $(seq 100); do
    if ip netns exec "$ns" bash -c "exec 3<>/dev/tcp/${1%:*}/${1#*:}" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "run-proxy-bench: the namespace's upstream did not start listening on $1" >&2
  return 1
}
for p in $port_ours $port_lib $port_squid $port_tiny $port_ref_splice $port_ref_copy 5002; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "run-proxy-bench: 127.0.0.1:$p is already in use" >&2; exit 1
  fi
done

if [[ -n ${WAIT_LOAD:-} ]]; then
  for _ in $(seq 60); do
    awk -v max="$WAIT_LOAD" '{ exit !($1 < max) }' /proc/loadavg && break
    echo "== load average $(cut -d' ' -f1-3 /proc/loadavg): waiting for < $WAIT_LOAD"
    sleep 5
  done
fi

echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -r) $(nproc) CPUs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== agent: $agent; driver: $driver"
echo "== bulk ${bulk_mib} MiB x $rounds rounds; latency $lat_rounds rounds; idle tunnels: $idle; cases: $cases; tests: $tests"

# --- the network namespace and the veth pair
ip netns add "$ns"
ip link add "$veth_root" type veth peer name "$veth_ns" netns "$ns"
ip addr add 198.51.100.1/24 dev "$veth_root"
ip link set "$veth_root" up
ip -n "$ns" addr add 198.51.100.10/24 dev "$veth_ns"
ip -n "$ns" link set "$veth_ns" up
ip -n "$ns" link set lo up

# --- upstream servers: one in the namespace, one on loopback
ip netns exec "$ns" "$driver" upstream --listen "$up_veth" 2>"$tmp/upstream-ns.log" &
pids+=($!)
"$driver" upstream --listen "$up_lo" 2>"$tmp/upstream-lo.log" &
pids+=($!)
wait_port_ns "$up_veth"
wait_port "$up_lo" "the loopback upstream"

# --- our proxy: the production command (veth only: it refuses 127.0.0.0/8) ...
cat >"$tmp/policy-veth.json" <<EOF
{"version":1,"bundle":"/usr/bin","net":"egress-allowlist","egress":["$up_veth"],"ipc_isolation":"best-effort"}
EOF
# Limits raised for the 1,000 idle tunnels (node keys proxy_max_tunnels_*; defaults 128, 1024).
echo "{\"proxy_listen\":\"127.0.0.1:$port_ours\",\"proxy_max_tunnels_per_module\":4096,\"proxy_max_tunnels_total\":4096}" >"$tmp/agent.json"
# --log takes a regular file only (issue 10: no FIFO or device, no symbolic link): a file in
# $tmp, where /dev/null was before.
"$agent" egress-proxy --config "$tmp/agent.json" --id bench --log "$tmp/ours.log" "$tmp/policy-veth.json" &
pid_ours=$!
pids+=($pid_ours)
# ... and the same ProxyServer hosted by the driver: limits raised to 4096, 127.0.0.0/8 exempt.
"$driver" serve --listen "127.0.0.1:$port_lib" --egress "$up_veth" --egress "$up_lo" --exempt 127.0.0.0/8 \
  --max-tunnels 4096 --log /dev/null &
pid_lib=$!
pids+=($pid_lib)
if [[ ${REF:-1} != 0 ]]; then
  "$driver" relay --listen "127.0.0.1:$port_ref_splice" --egress "$up_veth" --egress "$up_lo" &
  pid_ref_splice=$!
  pids+=($pid_ref_splice)
  "$driver" relay --listen "127.0.0.1:$port_ref_copy" --egress "$up_veth" --egress "$up_lo" --copy &
  pid_ref_copy=$!
  pids+=($pid_ref_copy)
  wait_port "127.0.0.1:$port_ref_splice" "the splice reference relay"
  wait_port "127.0.0.1:$port_ref_copy" "the copy reference relay"
fi
wait_port "127.0.0.1:$port_ours" "oarbank-agent egress-proxy"
wait_port "127.0.0.1:$port_lib" "the driver's ProxyServer"

# --- squid: minimal, CONNECT to the two test ports only, no cache, no logs
pid_squid=
if command -v squid >/dev/null; then
  mkdir -p "$tmp/squid" && chown proxy: "$tmp/squid" 2>/dev/null || true
  cat >"$tmp/squid.conf" <<EOF
http_port 127.0.0.1:$port_squid
acl localhost src 127.0.0.1/32
acl bench_ports port 5001 5002
acl CONNECT method CONNECT
http_access deny CONNECT !bench_ports
http_access allow localhost
http_access deny all
cache deny all
cache_mem 0 MB
access_log none
cache_store_log none
cache_log /dev/null
logfile_rotate 0
pid_filename none
coredump_dir $tmp/squid
pinger_enable off
max_filedescriptors 8192
workers 1
shutdown_lifetime 0 seconds
EOF
  squid -N -f "$tmp/squid.conf" >"$tmp/squid.out" 2>&1 &
  pid_squid=$!
  pids+=($pid_squid)
  wait_port "127.0.0.1:$port_squid" squid || { cat "$tmp/squid.out" >&2; exit 1; }
  echo "== squid: $(squid -v | head -1)"
else
  echo "== squid is not installed: side skipped (apt-get install squid)"
fi

# --- tinyproxy: Port, Listen, ConnectPort for the test ports, Allow 127.0.0.1
pid_tiny=
if command -v tinyproxy >/dev/null; then
  cat >"$tmp/tinyproxy.conf" <<EOF
User nobody
Group nogroup
Port $port_tiny
Listen 127.0.0.1
Timeout 600
MaxClients 4096
Allow 127.0.0.1
ConnectPort 5001
ConnectPort 5002
LogFile "/dev/null"
LogLevel Critical
EOF
  tinyproxy -d -c "$tmp/tinyproxy.conf" >"$tmp/tinyproxy.out" 2>&1 &
  pid_tiny=$!
  pids+=($pid_tiny)
  wait_port "127.0.0.1:$port_tiny" tinyproxy || { cat "$tmp/tinyproxy.out" >&2; exit 1; }
  echo "== tinyproxy: $(tinyproxy -v 2>&1 | head -1)"
else
  echo "== tinyproxy is not installed: side skipped (apt-get install tinyproxy)"
fi

summary=$tmp/summary.txt
: >"$summary"
# Sides of a case: sides_for CASE sets `target`, `title` and `sides`.
sides_for() {
  sides=(--side direct=direct)
  case $1 in
    veth)
      target=$up_veth
      title="veth (upstream in a namespace at $up_veth)"
      sides+=(--side "ours=proxy:127.0.0.1:$port_ours:$pid_ours")
      ;;
    loopback)
      target=$up_lo
      title="loopback (upstream at $up_lo)"
      ;;
    *) echo "run-proxy-bench: unknown case $1 (veth, loopback)" >&2; exit 1 ;;
  esac
  sides+=(--side "ours-lib=proxy:127.0.0.1:$port_lib:$pid_lib")
  [[ -n $pid_squid ]] && sides+=(--side "squid=proxy:127.0.0.1:$port_squid:$pid_squid")
  [[ -n $pid_tiny ]] && sides+=(--side "tinyproxy=proxy:127.0.0.1:$port_tiny:$pid_tiny")
  if [[ ${REF:-1} != 0 ]]; then
    sides+=(--side "ref-splice=proxy:127.0.0.1:$port_ref_splice:$pid_ref_splice"
            --side "ref-copy=proxy:127.0.0.1:$port_ref_copy:$pid_ref_copy")
  fi
  return 0
}
drive() {  # drive CASE TESTS OUTPUT_FILE
  sides_for "$1"
  # In the background and waited for, so that a signal to this script reaches the EXIT trap
  # (which stops the driver too) at once, not after the driver's current measurement.
  timeout "$max_seconds" "$driver" run --case "$1" --target "$target" "${sides[@]}" --tests "$2" \
    --bulk-mib "$bulk_mib" --rounds "$rounds" --latency-rounds "$lat_rounds" --idle "$idle" \
    --max-seconds "$max_seconds" >"$tmp/current.txt" &
  local driver_pid=$!
  pids+=($driver_pid)
  local rc=0
  wait "$driver_pid" || rc=$?
  cat "$tmp/current.txt"
  cat "$tmp/current.txt" >>"$3"
  [[ $rc == 0 ]] || { echo "run-proxy-bench: the driver failed (exit $rc)" >&2; exit 1; }
}

# Memory first, while every proxy is fresh (nothing relayed yet): afterwards their allocators
# hold memory from earlier work and a second measurement shows reuse, not the cost of a tunnel.
first_case=${cases%% *}
if [[ $tests == *idle* ]]; then
  sides_for "$first_case"
  echo
  echo "## idle tunnels, fresh proxies, case $title; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  drive "$first_case" idle "$tmp/out-idle.txt"
fi
for c in $cases; do
  t=${tests//idle/}
  [[ $t == *bulk* || $t == *latency* ]] || continue
  sides_for "$c"
  echo
  echo "## $title; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  drive "$c" "$t" "$tmp/out-$c.txt"
  grep '^SUMMARY' "$tmp/out-$c.txt" >>"$summary" || true
done

echo
echo "## Summary ($(date -u +%H:%M:%SZ); load average after: $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| case | side | bulk | handshake | ours against it |"
echo "| --- | --- | --- | --- | --- |"
sed 's/^SUMMARY //' "$summary"
if [[ -s $tmp/out-idle.txt ]]; then
  echo
  echo "| idle tunnels ($first_case, fresh proxies, pass 1) | held | RSS per tunnel | Pss per tunnel | stopped by |"
  echo "| --- | --- | --- | --- | --- |"
  grep '^IDLE' "$tmp/out-idle.txt" | sed 's/^IDLE //'
fi
for p in "$pid_ours" "$pid_lib" $pid_squid $pid_tiny; do
  kill -0 "$p" 2>/dev/null || echo "run-proxy-bench: proxy pid $p exited during the run" >&2
done
