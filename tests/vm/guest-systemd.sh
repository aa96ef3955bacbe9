# The production path, inside a booted Debian 12 guest with systemd as PID 1 (run-in-vm.sh
# --rootfs, from run-kernel-matrix.sh's 6.12-systemd case): the project's .deb installed with
# dpkg, modules run as oarbank-agent@ID.service instances with Delegate=yes on the unified
# cgroup2 hierarchy systemd mounts at /sys/fs/cgroup. Run by the guest's oarbank-guest.service
# as root, with sh (dash). Prints "ok ..." or "FAIL ..." per check and ends with
#   OARBANK-CHECKS passed=N failed=N seconds=S
# Environment (from the host): OARBANK_DEB_PREV (the same package as a lower version, for the
# upgrade) and OARBANK_DEB (the package under test).
set -u

passed=0
failed=0
t0=$(cut -d' ' -f1 /proc/uptime)
ok() {
  passed=$((passed + 1))
  echo "ok   $1"
}
fail() {
  failed=$((failed + 1))
  echo "FAIL $1${2:+: $2}"
}
# check NAME COMMAND...: passes when the command exits 0.
check() {
  name=$1
  shift
  if out=$("$@" 2>&1); then ok "$name"; else fail "$name" "$(echo "$out" | tail -n 5 | tr '\n' '|')"; fi
}
# expect NAME WANT GOT
expect() {
  if [ "$2" = "$3" ]; then ok "$1 ($3)"; else fail "$1" "want '$2', got '$3'"; fi
}
section() { echo "==== $1 (guest uptime $(cut -d' ' -f1 /proc/uptime) s)"; }
# until_true SECONDS COMMAND...: polls every 0.2 s.
until_true() {
  limit=$1
  shift
  end=$(($(cut -d. -f1 /proc/uptime) + limit))
  while ! "$@" >/dev/null 2>&1; do
    [ "$(cut -d. -f1 /proc/uptime)" -lt "$end" ] || return 1
    sleep 0.2
  done
}
now() { cut -d' ' -f1 /proc/uptime; }
# The processes of a module user (procps is not in the image): the fixed module_user, or one
# of the module_users range each id leases its own uid from (issue 12, agent.json's default).
user_pids() {
  for d in /proc/[0-9]*; do
    awk '/^Uid:/ { exit !($2 == 65534 || ($2 >= 61184 && $2 <= 65519)) }' "$d/status" 2>/dev/null &&
      echo "${d#/proc/}"
  done
}
elapsed_since() { awk -v s="$1" -v e="$(now)" 'BEGIN { printf "%.1f", e - s }'; }
journal_of() { journalctl -q --no-pager -o cat -u "oarbank-agent@$1.service"; }
stock_journal() { journalctl -q --no-pager -o cat -u oarbank-sandbox-stock.service; }
# The namespace stock's two names in the run state directory (namespace_stock.hpp).
stock_names() { for f in /run/oarbank/runs/namespace-stock*; do [ ! -e "$f" ] || printf '%s ' "${f##*/}"; done; }
# Every namespace a process in the system is in (inode numbers), once; but those of the
# process PID (when given): the namespace stock's own, which its unit's sandboxing makes at
# each start and which may carry the number of a module's namespace that is gone (the kernel
# hands a freed number out again).
all_namespaces() {
  # shellcheck disable=SC2046 # one word per process folder
  ls -l $(for d in /proc/[0-9]*; do [ "${d#/proc/}" = "${1:-}" ] || echo "$d/ns/"; done) 2>/dev/null |
    sed -n 's/.*-> [a-z_]*:\[\([0-9]*\)\]$/\1/p' | sort -u
}
# The files a package or the agent could leave, less what changes by itself (dpkg's and apt's
# state, logs, journald's and systemd's runtime state).
snapshot() {
  find /etc /usr /var /run /srv /opt -xdev 2>/dev/null |
    grep -Ev '^/(var/lib/dpkg|var/log|var/cache|var/lib/systemd|run/systemd|run/log|run/user|run/udev|run/oarbank-guest|var/tmp/systemd-private)(/|$)' |
    grep -Ev '^/etc/(ld\.so\.cache|\.pwd\.lock)$' | LC_ALL=C sort >"$1"
}

section "layout"
echo "kernel $(uname -r), PID 1 $(cat /proc/1/comm), systemd $(systemctl --version | head -n1)"
expect "/sys/fs/cgroup is cgroup2 (the unified layout)" cgroup2fs "$(stat -f -c %T /sys/fs/cgroup)"
check "no hybrid leftovers (/sys/fs/cgroup/unified)" test ! -e /sys/fs/cgroup/unified
echo "root cgroup.controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
mkdir -p /run/oarbank-guest
snapshot /root/files.before
namespaces_before=$(all_namespaces)

section "install (dpkg -i)"
check "dpkg -i the previous version" dpkg -i "$OARBANK_DEB_PREV"
check "the unit template is known to systemd" systemctl cat oarbank-agent@probe.service
expect "oarbank-nfd.service is not enabled by the package" disabled "$(systemctl is-enabled oarbank-nfd.service 2>&1)"
# The namespace stock: enabled and started by the package. Here with --verbose (a runtime
# drop-in, gone with the guest), so that its journal names each set it makes and which one
# each run takes (its network namespace's inode).
expect "oarbank-sandbox-stock.service is enabled by the package" enabled "$(systemctl is-enabled oarbank-sandbox-stock.service 2>&1)"
expect "oarbank-sandbox-stock.service is started by the package" active "$(systemctl is-active oarbank-sandbox-stock.service 2>&1)"
mkdir -p /run/systemd/system/oarbank-sandbox-stock.service.d
printf '[Service]\nExecStart=\nExecStart=/usr/bin/oarbank-agent sandbox-stock --verbose\n' \
  >/run/systemd/system/oarbank-sandbox-stock.service.d/verbose.conf
systemctl daemon-reload
check "the stock restarts with --verbose" systemctl restart oarbank-sandbox-stock.service
check "it names itself in /run/oarbank/runs (its file)" \
  until_true 10 test -f /run/oarbank/runs/namespace-stock
check "it made its sets (under the unit's hardening)" until_true 10 sh -c \
  "journalctl -q --no-pager -o cat -u oarbank-sandbox-stock.service | grep -q 'sandbox-stock: serving /run/oarbank/runs'"
expect "no set it could not make" "" "$(stock_journal | grep 'cannot' || true)"
# The operator's edit: hard limits, and a pids_max of their own (the default is 1024).
sed -i -e 's/"hard_limits": false/"hard_limits": true/' -e 's/"pids_max": 1024/"pids_max": 77/' \
  /etc/oarbank/agent.json
cp /etc/oarbank/agent.json /root/agent.json.edited
check "agent.json edited (hard_limits true, pids_max 77)" grep -q '"hard_limits": true' /etc/oarbank/agent.json

# One bundle, two modules. The module starts a child that ignores SIGTERM (only cgroup.kill
# ends it: its sleeps inherit the ignored signal) and an orphan (a double fork), tries to
# leave its session (setsid: allowed, its cgroup leaf being its container: issue 12's world;
# the leaf still holds every process, below), says where it runs, and when the host side writes a peer's pid and file into its work folder, tries to
# signal that process and read that file, and its own.
bundle=/srv/oarbank/modules/guest
mkdir -p "$bundle"
cat >"$bundle/run.sh" <<'EOF'
#!/bin/sh
id=$1
# alpha's module ignores the stop's SIGTERM itself: only sandbox-run's cgroup.kill, after its
# grace period (--kill-after, 10 s), ends it.
[ "${2:-}" != ignore-term ] || trap '' TERM
sh -c 'trap "" TERM; while :; do sleep 1; done' &
(sleep 3600 &)
if setsid true 2>/dev/null; then ss=setsid-ok; else ss=setsid-refused; fi
echo "<0>oarbank-guest-module $id emerg"
echo "oarbank-guest-module $id up pid=$$ uid=$(id -u) $ss cgroup=$(cat /proc/self/cgroup)"
echo "own file" >"$HOME/own"
while :; do
  if [ -f "$HOME/peer" ] && [ ! -f "$HOME/peer.done" ]; then
    read -r peer_pid peer_file <"$HOME/peer"
    if kill -0 "$peer_pid" 2>/dev/null; then s=signal-ok; else s=signal-refused; fi
    if cat "$peer_file" >/dev/null 2>&1; then r=read-ok; else r=read-refused; fi
    if kill -0 $$ 2>/dev/null; then o=self-signal-ok; else o=self-signal-refused; fi
    if cat "$HOME/own" >/dev/null 2>&1; then w=own-read-ok; else w=own-read-refused; fi
    echo "$s $r $o $w" >"$HOME/peer.result"
    touch "$HOME/peer.done"
    echo "oarbank-guest-module $id peer: $s $r $o $w"
  fi
  sleep 0.2
done
EOF
chmod 0755 "$bundle/run.sh"
for id in alpha beta; do
  case $id in
    alpha) cpu=0.5 mem=96Mi extra=ignore-term ;;
    beta) cpu=0.25 mem=64Mi extra='' ;;
  esac
  cat >"$bundle/$id.policy.json" <<EOF
{
  "version": 1,
  "bundle": "$bundle",
  "work": "/var/lib/oarbank/modules/$id/work",
  "temp": "/var/lib/oarbank/modules/$id/tmp",
  "net": "none",
  "ipc_isolation": "required",
  "reservations": { "cpu": $cpu, "memory": "$mem" }
}
EOF
  printf 'OARBANK_POLICY=%s\nOARBANK_ARGV=%s %s %s\n' "$bundle/$id.policy.json" "$bundle/run.sh" "$id" "$extra" \
    >"/etc/oarbank/modules/$id.env"
done

# started ID N STOCK: checks a started instance (its Nth start); sets cg, leaf, main_pid,
# module_pid, leaf_pids. STOCK: "stock" when the run must take its namespaces from the stock,
# "own" when it must make its own (the stock stopped).
started() {
  id=$1 n=$2 stock=$3
  unit=oarbank-agent@$id.service
  if until_true 30 sh -c "[ \"\$(journalctl -q --no-pager -o cat -u $unit | grep -c '^oarbank-guest-module $id up ')\" -ge $n ]"; then
    ok "$id: the module's output reaches the journal ($(journal_of "$id" | grep "^oarbank-guest-module $id up " | tail -n1))"
    # SyslogLevelPrefix=no: a module's "<0>" is text, not an emergency of the unit's.
    expect "$id: a line the module starts with <0> is no emergency" "no" \
      "$(journalctl -q --no-pager -o cat -p 0 -u "$unit" | grep -q "oarbank-guest-module $id emerg" && echo yes || echo no)"
    expect "$id: ... and is logged as the module wrote it" "yes" \
      "$(journal_of "$id" | grep -q "^<0>oarbank-guest-module $id emerg$" && echo yes || echo no)"
  else
    fail "$id: no 'up' line in the journal" "$(systemctl status --no-pager "$unit" 2>&1 | tail -n 8 | tr '\n' '|')"
  fi
  expect "$id: active" active "$(systemctl is-active "$unit")"
  cg=$(systemctl show -P ControlGroup "$unit")
  expect "$id: the unit's cgroup is in oarbank.slice" "/oarbank.slice/oarbank-agent@$id.service" "$cg"
  leaf=/sys/fs/cgroup$cg/oarbank-$id
  main_pid=$(systemctl show -P MainPID "$unit")
  module_pid=$(journal_of "$id" | sed -n "s/^oarbank-guest-module $id up pid=\([0-9]*\) .*/\1/p" | tail -n1)
  check "$id: the leaf $leaf exists" test -d "$leaf"
  expect "$id: the module's cgroup is the leaf under the delegated cgroup" "0::$cg/oarbank-$id" "$(cat "/proc/$module_pid/cgroup" 2>&1)"
  expect "$id: sandbox-run's cgroup is the supervisor leaf beside it" "0::$cg/oarbank-supervisor" "$(cat "/proc/$main_pid/cgroup" 2>&1)"
  expect "$id: no process in the unit's own cgroup (no internal processes)" "" "$(cat "/sys/fs/cgroup$cg/cgroup.procs")"
  # Issue 12: each module id its own uid, from agent.json's module_users (61184-65519), the
  # uid of the work directory sandbox-run made for it.
  module_uid=$(journal_of "$id" | grep -o "^oarbank-guest-module $id up .*uid=[0-9]*" | tail -n1 | grep -o 'uid=[0-9]*' | cut -d= -f2)
  if [ -n "$module_uid" ] && [ "$module_uid" -ge 61184 ] && [ "$module_uid" -le 65519 ]; then
    ok "$id: the module runs as a user of its own ($module_uid, from module_users)"
  else
    fail "$id: the module runs as uid '$module_uid', not one of module_users (61184-65519)"
  fi
  expect "$id: its work directory is its user's" "$module_uid" "$(stat -c %u "/var/lib/oarbank/modules/$id/work")"
  leaf_pids=$(cat "$leaf/cgroup.procs" 2>/dev/null | tr '\n' ' ')
  expect "$id: the module may start a session of its own (its leaf is its container)" setsid-ok \
    "$(journal_of "$id" | grep "^oarbank-guest-module $id up " | tail -n1 | grep -o 'setsid-[a-z]*')"
  # run.sh, the SIGTERM-ignoring sh, the orphan; and most of the time the sleeps of both loops.
  nprocs=$(echo "$leaf_pids" | wc -w)
  if [ "$nprocs" -ge 3 ]; then ok "$id: all the module's processes are in the leaf ($nprocs)"; else fail "$id: the leaf holds $nprocs processes" "$leaf_pids"; fi
  check "$id: the orphaned grandchild is in the leaf too" sh -c "for p in $leaf_pids; do [ \"\$(cat /proc/\$p/cmdline 2>/dev/null | tr '\\0' ' ')\" = 'sleep 3600 ' ] && exit 0; done; exit 1"
  expect "$id: pids.max from agent.json" 77 "$(cat "$leaf/pids.max")"
  case $id in
    alpha) want_cpu="50000 100000" want_mem=$((96 * 1048576)) ;;
    beta) want_cpu="25000 100000" want_mem=$((64 * 1048576)) ;;
  esac
  expect "$id: cpu.max from reservations.cpu (hard_limits)" "$want_cpu" "$(cat "$leaf/cpu.max")"
  expect "$id: memory.max from reservations.memory (hard_limits)" "$want_mem" "$(cat "$leaf/memory.max")"
  # The namespaces the module is in that no process was in before it started.
  module_ns=$(ls -l "/proc/$module_pid/ns/" 2>/dev/null | sed -n 's/.*-> [a-z_]*:\[\([0-9]*\)\]$/\1/p' |
    grep -vxF "$namespaces_before" | tr '\n' ' ')
  echo "$id: cgroup $cg, sandbox-run $main_pid, module $module_pid, leaf [$leaf_pids], new namespaces [$module_ns]"
  # The stock's line for the set this run took names the module's network namespace and the
  # taker, sandbox-run. (Not checked the other way: a namespace's inode number is reused once
  # it is freed, so a run's own may carry the number of a stock's set that is gone.)
  module_net=$(readlink "/proc/$module_pid/ns/net")
  if [ "$stock" = stock ]; then
    taken=$(stock_journal | grep -xF "oarbank-agent sandbox-stock: taken d $module_net by pid $main_pid" || true)
    if [ -n "$taken" ]; then ok "$id: its network namespace is the stock's ($taken)"; else fail "$id: the stock's journal names no set with $module_net" "$(stock_journal | tail -n 6 | tr '\n' '|')"; fi
    expect "$id: its IPC namespace is new too" yes "$([ "$(readlink "/proc/$module_pid/ns/ipc")" != "$(readlink /proc/1/ns/ipc)" ] && echo yes || echo no)"
  else
    expect "$id: no note about the stock (there is none)" "" "$(journal_of "$id" | grep 'namespace stock' || true)"
    check "$id: its network namespace is its own, not the node's" test "$module_net" != "$(readlink /proc/1/ns/net)"
  fi
}

# gone ID "PIDS" "NAMESPACES" CG: nothing of the instance is left.
gone() {
  id=$1 pids=$2 nss=$3 gcg=$4
  left=''
  for p in $pids; do [ ! -d "/proc/$p" ] || left="$left $p($(cat /proc/$p/comm 2>/dev/null))"; done
  expect "$id: no process left" "" "$left"
  check "$id: no leaf left" test ! -e "/sys/fs/cgroup$gcg/oarbank-$id"
  check "$id: the unit's cgroup is gone" test ! -e "/sys/fs/cgroup$gcg"
  expect "$id: no run record left in /run/oarbank/runs" "" "$(ls -A /run/oarbank/runs 2>/dev/null | grep -F "$id" || true)"
  still=''
  now_ns=$(all_namespaces "$(systemctl show -P MainPID oarbank-sandbox-stock.service)")
  for ns in $nss; do echo "$now_ns" | grep -qx "$ns" && still="$still $ns"; done
  expect "$id: no namespace of the module left" "" "$still"
  expect "$id: no process of the module user outside the other instance" "" \
    "$(for p in $(user_pids); do grep -q "oarbank-agent@$id" /proc/$p/cgroup && echo "$p"; done)"
}

section "systemctl start: alpha"
check "systemctl start oarbank-agent@alpha" systemctl start oarbank-agent@alpha
started alpha 1 stock
alpha_cg=$cg alpha_pids="$main_pid $leaf_pids" alpha_ns=$module_ns alpha_uid=$module_uid

section "two units side by side: beta"
check "systemctl start oarbank-agent@beta" systemctl start oarbank-agent@beta
started beta 1 stock
beta_cg=$cg beta_pids="$main_pid $leaf_pids" beta_module=$module_pid beta_uid=$module_uid
check "alpha and beta run as two users" test "$alpha_uid" != "$beta_uid"
expect "alpha's leaf holds none of beta's processes" "" \
  "$(for p in $beta_pids; do grep -qx "$p" /sys/fs/cgroup$alpha_cg/oarbank-alpha/cgroup.procs && echo "$p"; done)"
echo "beta's secret" >/var/lib/oarbank/modules/beta/work/secret
chown "$beta_uid:$beta_uid" /var/lib/oarbank/modules/beta/work/secret
chmod 0600 /var/lib/oarbank/modules/beta/work/secret
check "control: beta's module is alive (root can signal it)" kill -0 "$beta_module"
echo "$beta_module /var/lib/oarbank/modules/beta/work/secret" >/var/lib/oarbank/modules/alpha/work/peer
if until_true 15 test -s /var/lib/oarbank/modules/alpha/work/peer.result; then
  # A uid each (issue 12), and the sandbox (Landlock's signal scope and file rules): both
  # keep them apart.
  expect "alpha cannot signal beta's module nor read beta's work, and can do both to its own" \
    "signal-refused read-refused self-signal-ok own-read-ok" "$(cat /var/lib/oarbank/modules/alpha/work/peer.result)"
else
  fail "alpha never answered the peer check"
fi

section "sandbox-report in a delegated unit of oarbank.slice"
# What sandbox-run sees: the same slice, a delegated cgroup of its own. (A unit file, not
# systemd-run: that needs D-Bus, which the image leaves out.)
mkdir -p /run/oarbank-guest
cat >/run/systemd/system/oarbank-guest-cmd.service <<'EOF'
[Service]
Type=oneshot
Slice=oarbank.slice
Delegate=yes
ExecStart=/bin/sh /run/oarbank-guest/cmd.sh
StandardOutput=truncate:/run/oarbank-guest/cmd.out
StandardError=journal
EOF
systemctl daemon-reload
# in_slice COMMAND ARG...: runs it there (simple words only), prints its output, returns its status.
in_slice() {
  echo "exec $*" >/run/oarbank-guest/cmd.sh
  systemctl start oarbank-guest-cmd.service 2>/dev/null
  cat /run/oarbank-guest/cmd.out
  return "$(systemctl show -P ExecMainStatus oarbank-guest-cmd.service)"
}
report=$(in_slice /usr/bin/oarbank-agent sandbox-report --json 2>&1)
for want in '"mount_point": "/sys/fs/cgroup"' '"delegated_by_systemd": true' '"leaf_parent_writable": true' \
  '"cgroup_kill": true' '"hard_limits": true' '"own_cgroup": "/oarbank.slice/oarbank-guest-cmd.service"'; do
  if echo "$report" | grep -qF "$want"; then ok "report: $want"; else fail "report: $want" "$(echo "$report" | head -n 20 | tr '\n' '|')"; fi
done
if echo "$report" | grep -q '"leaf_parent": "/sys/fs/cgroup/oarbank.slice/oarbank-guest-cmd.service"'; then
  ok "report: the leaves' parent is the unit's own cgroup in oarbank.slice"
else
  fail "report: leaf_parent" "$(echo "$report" | grep leaf_parent)"
fi
controllers=$(echo "$report" | sed -n '/"controllers": \[/,/\]/p' | tr -d ' ",[]' | grep -v '^controllers:$' | tr '\n' ' ')
for c in cpu memory pids; do
  case " $controllers " in *" $c "*) ok "report: the delegated cgroup has the $c controller" ;; *) fail "report: no $c controller" "$controllers" ;; esac
done
nfd=$(in_slice /usr/bin/oarbank-agent sandbox-report --format nfd 2>&1)
for row in filesystem ipc container.cgroup limit.cpu limit.memory limit.pids; do
  expect "report: $row" "feature.node.kubernetes.io/oarbank-sandbox.$row=enforced" \
    "$(echo "$nfd" | grep "^feature.node.kubernetes.io/oarbank-sandbox.$row=")"
done
start=$(now)
status=0
table=$(in_slice /usr/bin/oarbank-agent sandbox-report --verify 2>&1) || status=$?
expect "sandbox-report --verify passes (exit 0)" 0 "$status"
echo "sandbox-report --verify ($(elapsed_since "$start") s):"
echo "$table"

section "the NFD feature file (oarbank-nfd.service, oarbank-nfd.path)"
nfd_file=/etc/kubernetes/node-feature-discovery/features.d/oarbank-sandbox
check "systemctl enable --now oarbank-nfd.service oarbank-nfd.path" \
  systemctl enable --now oarbank-nfd.service oarbank-nfd.path
expect "oarbank-nfd.service runs at boot (enabled)" enabled "$(systemctl is-enabled oarbank-nfd.service)"
check "the NFD file exists" test -s "$nfd_file"
verified=$(in_slice /usr/bin/oarbank-agent sandbox-report --verify --format nfd 2>&1)
if [ "$(cat "$nfd_file")" = "$verified" ]; then ok "the NFD file is the verified report"; else fail "the NFD file differs from the report" "$(diff "$nfd_file" - <<EOF 2>&1 | tr '\n' '|'
$verified
EOF
)"; fi
# A configuration change rewrites it: capped at ABI 5, the IPC row is unavailable.
sed -i 's/"landlock_abi_max": null/"landlock_abi_max": 5/' /etc/oarbank/agent.json
check "after agent.json changes, the NFD file follows (ipc=unavailable)" \
  until_true 60 grep -qx 'feature.node.kubernetes.io/oarbank-sandbox.ipc=unavailable' "$nfd_file"
cp /root/agent.json.edited /etc/oarbank/agent.json
check "and back (ipc=enforced)" until_true 60 grep -qx 'feature.node.kubernetes.io/oarbank-sandbox.ipc=enforced' "$nfd_file"
expect "no temporary file beside it" "" "$(ls -A "$(dirname "$nfd_file")" | grep -v '^oarbank-sandbox$' || true)"

section "systemctl stop: alpha, whose module ignores SIGTERM"
start=$(now)
check "systemctl stop oarbank-agent@alpha" systemctl stop oarbank-agent@alpha
took=$(elapsed_since "$start")
# sandbox-run's grace period (10 s), then cgroup.kill: before systemd's own SIGKILL at 30 s.
if awk -v t="$took" 'BEGIN { exit !(t >= 9 && t < 30) }'; then
  ok "stopped by sandbox-run's cgroup.kill after its grace period, within TimeoutStopSec=30s (${took} s)"
else
  fail "the stop took ${took} s (want 10 s, sandbox-run's --kill-after, and under 30 s)"
fi
# Killed, not stopped: the unit says so (137, SIGKILL), and stays listed until reset-failed.
expect "alpha: the module's end is reported (sandbox-run exit 137)" "failed 137" \
  "$(systemctl is-active oarbank-agent@alpha.service) $(systemctl show -P ExecMainStatus oarbank-agent@alpha.service)"
journalctl -q --no-pager -o cat -u oarbank-agent@alpha.service | tail -n 4
gone alpha "$alpha_pids" "$alpha_ns" "$alpha_cg"
expect "beta still runs" active "$(systemctl is-active oarbank-agent@beta.service)"
systemctl reset-failed oarbank-agent@alpha.service

section "systemctl kill --signal=SIGKILL of beta's supervisor alone, then a restart"
beta_ns_now=$(ls -l "/proc/$beta_module/ns/" 2>/dev/null | sed -n 's/.*-> [a-z_]*:\[\([0-9]*\)\]$/\1/p' | grep -vxF "$namespaces_before" | tr '\n' ' ')
start=$(now)
check "systemctl kill --kill-whom=main --signal=SIGKILL oarbank-agent@beta" \
  systemctl kill --kill-whom=main --signal=SIGKILL oarbank-agent@beta
check "the unit goes down" until_true 40 sh -c '! systemctl is-active -q oarbank-agent@beta.service && [ -z "$(systemctl show -P MainPID oarbank-agent@beta.service | grep -vx 0)" ]'
echo "beta down after $(elapsed_since "$start") s: $(systemctl is-active oarbank-agent@beta.service), Result=$(systemctl show -P Result oarbank-agent@beta.service)"
left=''
for p in $beta_pids; do [ ! -d "/proc/$p" ] || left="$left $p"; done
expect "beta: no process of the killed run left" "" "$left"
check "beta: systemd removed the leaf with the unit's cgroup" test ! -e "/sys/fs/cgroup$beta_cg"
echo "run records after the SIGKILL: [$(ls -A /run/oarbank/runs 2>/dev/null | tr '\n' ' ')]"
# The restart without the namespace stock: a run makes its own namespaces then.
check "systemctl stop oarbank-sandbox-stock" systemctl stop oarbank-sandbox-stock.service
expect "the stopped stock removed its file" "" "$(stock_names)"
expect "it ended cleanly on SIGTERM" "inactive success" \
  "$(systemctl is-active oarbank-sandbox-stock.service) $(systemctl show -P Result oarbank-sandbox-stock.service)"
check "systemctl restart oarbank-agent@beta" systemctl restart oarbank-agent@beta
started beta 2 own
check "systemctl start oarbank-sandbox-stock (again)" systemctl start oarbank-sandbox-stock.service
check "the stock names itself again" until_true 10 test -f /run/oarbank/runs/namespace-stock
stock_pid=$(systemctl show -P MainPID oarbank-sandbox-stock.service)
beta_pids2="$main_pid $leaf_pids" beta_cg2=$cg
expect "beta: the restarted module is a new process" yes "$([ "$module_pid" != "$beta_module" ] && echo yes || echo no)"

section "a .deb upgrade keeps the edited /etc/oarbank/agent.json"
rm -f "$nfd_file"
check "dpkg -i the package under test (an upgrade)" dpkg -i "$OARBANK_DEB"
check "the upgrade writes the enabled NFD file again" until_true 30 test -s "$nfd_file"
expect "the new version is installed" "$(dpkg-deb -f "$OARBANK_DEB" Version)" "$(dpkg-query -W -f '${Version}' oarbank-agent)"
check "agent.json is the operator's edited file" cmp /root/agent.json.edited /etc/oarbank/agent.json
check "no agent.json.dpkg-* beside it" sh -c '! ls /etc/oarbank/agent.json.dpkg-* 2>/dev/null'
expect "an upgrade leaves a running module running" active "$(systemctl is-active oarbank-agent@beta.service)"
expect "the upgrade restarts the namespace stock on the new binary" "active yes" \
  "$(systemctl is-active oarbank-sandbox-stock.service) $([ "$(systemctl show -P MainPID oarbank-sandbox-stock.service)" != "$stock_pid" ] && echo yes || echo no)"
check "the new stock names itself (its file, written last)" until_true 10 test -f /run/oarbank/runs/namespace-stock
expect "nothing else of it in /run/oarbank/runs" "namespace-stock " "$(stock_names)"
start=$(now)
check "systemctl stop oarbank-agent@beta" systemctl stop oarbank-agent@beta
took=$(elapsed_since "$start")
if awk -v t="$took" 'BEGIN { exit !(t < 5) }'; then ok "beta, whose module dies of SIGTERM, stopped at once (${took} s)"; else fail "beta's stop took ${took} s"; fi
expect "beta ended cleanly (SuccessExitStatus=143), not failed" inactive "$(systemctl is-active oarbank-agent@beta.service)"
journalctl -q --no-pager -o cat -u oarbank-agent@beta.service | tail -n 3
gone beta "$beta_pids2 $beta_pids" "$beta_ns_now $module_ns" "$beta_cg2"
rm -r /run/systemd/system/oarbank-sandbox-stock.service.d
systemctl daemon-reload

section "dpkg --purge leaves nothing"
# The operator's own files go first (purge keeps env files and module data on purpose).
rm -f /etc/oarbank/modules/alpha.env /etc/oarbank/modules/beta.env
rm -rf /srv/oarbank /var/lib/oarbank/modules/alpha /var/lib/oarbank/modules/beta
# Removed first, then purged: what removal alone leaves of the namespace stock.
stock_pid=$(systemctl show -P MainPID oarbank-sandbox-stock.service)
check "dpkg --remove oarbank-agent" dpkg --remove oarbank-agent
check "the namespace stock was stopped (its process is gone)" test ! -d "/proc/$stock_pid"
expect "removal leaves no file of the stock in /run/oarbank/runs" "" "$(stock_names)"
check "removal keeps the stock's enablement link (a reinstall finds it as the operator left it)" \
  test -L /etc/systemd/system/multi-user.target.wants/oarbank-sandbox-stock.service
check "dpkg --purge oarbank-agent" dpkg --purge oarbank-agent
expect "dpkg knows no oarbank-agent" "" "$(dpkg-query -W -f '${Status}' oarbank-agent 2>/dev/null | grep -v not-installed || true)"
snapshot /root/files.after
expect "no file left (a snapshot of /etc /usr /var /run /srv /opt before the install and after)" "" \
  "$(comm -13 /root/files.before /root/files.after | tr '\n' ' ')"
expect "no file of the system lost" "" "$(comm -23 /root/files.before /root/files.after | tr '\n' ' ')"
expect "no oarbank unit loaded (but this test's own)" "" \
  "$(systemctl list-units --all --no-legend --plain 'oarbank*' | grep -v '^oarbank-guest' | tr '\n' ' ')"
check "no oarbank.slice cgroup" test ! -e /sys/fs/cgroup/oarbank.slice
expect "no process of the module user" "" "$(user_pids | tr '\n' ' ')"

echo "OARBANK-CHECKS passed=$passed failed=$failed seconds=$(elapsed_since "$t0")"
[ "$failed" -eq 0 ]
