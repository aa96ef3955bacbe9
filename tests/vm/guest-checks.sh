#!/bin/sh
# Runs inside a VM booted by run-in-vm.sh (busybox sh, as root) for run-kernel-matrix.sh:
# checks what oarbank-agent does on this kernel against what the case expects.
#
# Environment (passed by run-kernel-matrix.sh with --env):
#   OARBANK_AGENT                 the agent binary
#   OARBANK_PAYLOAD               the probe payload (its folder is the policy's bundle)
#   OARBANK_LANDLOCK_ABI_HELPER   tests/vm/landlock-abi.c built static
#   OARBANK_EXPECT_LANDLOCK_ABI   2, 6 (or another number), or disabled
#   OARBANK_SUITE                 optional: the integration suite binary; then the suite runs
#                                 last (guest-suite.sh, with OARBANK_SUITE_FILTER) and counts
#                                 as one check
# Prints "ok:", "FAIL:" and "SKIP:" lines, then one summary line
#   OARBANK-CHECKS kernel=... landlock=... passed=N failed=N skipped=N
# (after guest-suite.sh's own OARBANK-SUITE line) and exits 1 if anything failed.
set -u

agent=${OARBANK_AGENT:?OARBANK_AGENT not set}
payload=${OARBANK_PAYLOAD:?OARBANK_PAYLOAD not set}
helper=${OARBANK_LANDLOCK_ABI_HELPER:?OARBANK_LANDLOCK_ABI_HELPER not set}
expect=${OARBANK_EXPECT_LANDLOCK_ABI:?OARBANK_EXPECT_LANDLOCK_ABI not set}
bundle=$(dirname "$payload")

passed=0 failed=0 skipped=0
pass() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
skip() { echo "SKIP: $*"; skipped=$((skipped + 1)); }
section() { echo; echo "== $*"; }

# run NAME CMD...: runs CMD with stdout in $out, stderr in $err, status in $rc, and shows
# them; runq shows only the status and stderr (the caller picks from stdout).
runq() {
  name=$1; shift
  "$@" >/tmp/checks.out 2>/tmp/checks.err
  rc=$?
  out=$(cat /tmp/checks.out)
  err=$(cat /tmp/checks.err)
  echo "\$ $name -> exit $rc"
  [ -z "$err" ] || echo "$err" | sed 's/^/  stderr: /'
}
run() {
  runq "$@"
  [ -z "$out" ] || echo "$out" | sed 's/^/  stdout: /'
}

# expect_answer WHAT WANT: the payload's one-line answer ($out) of a sandboxed run is WANT.
expect_answer() {
  if [ "$rc" -eq 0 ] && [ "$out" = "$2" ]; then
    pass "$1: $out"
  else
    fail "$1: wanted exit 0 and '$2', got exit $rc and '$out' ${err:+(stderr: $err)}"
  fi
}

kernel=$(uname -r)
section "kernel"
echo "uname -r: $kernel"
echo "cgroup.controllers: $(cat /sys/fs/cgroup/cgroup.controllers 2>&1)"
echo "cmdline: $(cat /proc/cmdline)"
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
echo "active LSMs: $(cat /sys/kernel/security/lsm 2>/dev/null || echo '(no securityfs)')"

# Policies. The bundle is the payload's folder; /srv/outside is readable by nobody (so only
# Landlock can refuse it) and is in no policy but the control one.
mkdir -p /srv/outside
echo secret >/srv/outside/secret
chmod 0755 /srv /srv/outside
chmod 0644 /srv/outside/secret
cat >/tmp/best-effort.json <<EOF
{"bundle": "$bundle", "ipc_isolation": "best-effort"}
EOF
cat >/tmp/required.json <<EOF
{"bundle": "$bundle", "ipc_isolation": "required"}
EOF
cat >/tmp/control.json <<EOF
{"bundle": "$bundle", "runtime": ["/srv/outside"], "ipc_isolation": "best-effort"}
EOF
echo '{"landlock_abi_max": 5}' >/tmp/abi-max-5.json
chmod 0644 /tmp/*.json

# --- The kernel's Landlock state: the helper, then the agent's own probe (--explain).
section "Landlock state (expected: $expect)"
actual=$("$helper" 2>&1)
echo "landlock_create_ruleset(VERSION): $actual"
if [ "$actual" = "$expect" ]; then
  pass "the kernel's Landlock state is $actual, as this case expects"
else
  fail "EXPECTATION MISMATCH: this case expects Landlock '$expect' but the kernel answers '$actual'"
fi
runq "sandbox-exec --explain best-effort.json -- /x" "$agent" sandbox-exec --explain /tmp/best-effort.json -- /x
echo "$out" | sed -n '/^  "kernel": {/,/^  }/p' | sed 's/^/  stdout: /'
explain_abi=$(echo "$out" | sed -n 's/.*"landlock_abi": *\([0-9][0-9]*\).*/\1/p' | head -n1)
explain_state=$(echo "$out" | sed -n 's/.*"landlock": *"\([a-z]*\)".*/\1/p' | head -n1)
case "$expect" in
  [0-9]*)
    if [ "$expect" -ge 3 ]; then
      if [ "$rc" -eq 0 ] && [ "$explain_state" = present ] && [ "$explain_abi" = "$expect" ]; then
        pass "--explain sees Landlock present, ABI $explain_abi"
      else
        fail "--explain: wanted exit 0 with landlock present, ABI $expect; got exit $rc, landlock '$explain_state', ABI '$explain_abi'"
      fi
    elif [ "$rc" -eq 70 ]; then
      pass "--explain refuses (70) below the filesystem floor, before printing the plan"
    else
      fail "--explain: wanted 70 on Landlock ABI $expect, got $rc"
    fi
    ;;
  *)
    if [ "$rc" -eq 70 ]; then
      pass "--explain refuses (70) with Landlock $expect"
    elif [ "$rc" -eq 0 ] && [ "$explain_state" = "$expect" ]; then
      pass "--explain sees Landlock $explain_state"
    else
      fail "--explain: wanted 70 (or landlock '$expect'), got exit $rc, landlock '$explain_state'"
    fi
    ;;
esac

# --- sandbox-report, if this build has it.
section "sandbox-report"
runq "sandbox-report --json" "$agent" sandbox-report --json
if [ "$rc" -eq 64 ] && echo "$err" | grep -qi usage; then
  skip "sandbox-report: this build has no such sub-command (usage error 64)"
elif [ "$rc" -ne 0 ]; then
  fail "sandbox-report --json exited $rc"
else
  report_state=$(echo "$out" | sed -n 's/^ *"landlock": *"\([a-z]*\)".*/\1/p' | head -n1)
  report_abi=$(echo "$out" | sed -n 's/^ *"landlock_abi": *\([0-9][0-9]*\).*/\1/p' | head -n1)
  case "$expect" in
    [0-9]*) want_state=present want_abi=$expect ;;
    *) want_state=$expect want_abi=0 ;;
  esac
  if [ "$report_state" = "$want_state" ] && [ "$report_abi" = "$want_abi" ]; then
    pass "sandbox-report: landlock $report_state, ABI $report_abi"
  else
    fail "sandbox-report: wanted landlock $want_state ABI $want_abi, got '$report_state' ABI '$report_abi'"
  fi
  echo "facts:"
  echo "$out" | grep -E '^    "(kernel_release|landlock[a-z_]*|seccomp_filter|network_namespaces|cgroup2_mounted)":' | sed 's/^ */  /'
  echo "rows:"
  echo "$out" | awk '/"row":/ { r = $0; sub(/.*"row": *"/, "", r); sub(/".*/, "", r) }
                     /"status":/ && r != "" { s = $0; sub(/.*"status": *"/, "", s); sub(/".*/, "", s); printf "  %-28s %s\n", r, s; r = "" }'
  run "sandbox-report --verify" "$agent" sandbox-report --verify
  if [ "$rc" -eq 64 ] && echo "$err" | grep -qi usage; then
    skip "sandbox-report --verify: not in this build"
  elif [ "$rc" -eq 0 ]; then
    pass "sandbox-report --verify: every enforced row held under the real launcher"
  else
    fail "sandbox-report --verify exited $rc"
  fi
fi

# --- sandbox-exec of the payload.
section "sandbox-exec"
case "$expect" in
  [0-9]*) [ "$expect" -ge 3 ] && enforce=yes || enforce=no ;;
  *) enforce=no ;;
esac
# refused WHAT: the last run was refused with 70 and one stderr line naming Landlock.
refused() {
  lines=$(printf '%s\n' "$err" | grep -c .)
  if [ "$rc" -eq 70 ] && [ "$lines" -eq 1 ] && echo "$err" | grep -qi landlock && [ -z "$out" ]; then
    pass "$1: refused with 70, one line naming Landlock"
  else
    fail "$1: wanted exit 70, nothing on stdout and one stderr line naming Landlock; got exit $rc, $lines stderr line(s)"
  fi
}

if [ "$enforce" = no ]; then
  run "sandbox-exec best-effort.json -- payload status" "$agent" sandbox-exec /tmp/best-effort.json -- "$payload" status
  refused "best-effort policy on Landlock $expect"
  run "sandbox-exec required.json -- payload status" "$agent" sandbox-exec /tmp/required.json -- "$payload" status
  refused "required policy on Landlock $expect"
else
  run "sandbox-exec best-effort.json -- payload status" "$agent" sandbox-exec /tmp/best-effort.json -- "$payload" status
  if [ "$rc" -eq 0 ] && echo "$out" | grep -q '^NoNewPrivs:[[:space:]]*1$' &&
     echo "$out" | grep -q '^Seccomp:[[:space:]]*2$'; then
    pass "status: NoNewPrivs 1, Seccomp 2"
  else
    fail "status: wanted exit 0 with NoNewPrivs: 1 and Seccomp: 2, got exit $rc"
  fi
  if echo "$out" | grep -q '^Uid:[[:space:]]*65534[[:space:]]*65534[[:space:]]*65534[[:space:]]*65534$' &&
     echo "$out" | grep -q '^CapEff:[[:space:]]*0*$'; then
    pass "status: runs as nobody (65534) with no effective capability"
  else
    fail "status: wanted Uid 65534 everywhere and CapEff 0"
  fi

  run "sandbox-exec control.json -- payload read /srv/outside/secret" \
    "$agent" sandbox-exec /tmp/control.json -- "$payload" read /srv/outside/secret
  expect_answer "control: /srv/outside in the policy is readable by the module user" "ok"
  run "sandbox-exec best-effort.json -- payload read /srv/outside/secret" \
    "$agent" sandbox-exec /tmp/best-effort.json -- "$payload" read /srv/outside/secret
  expect_answer "Landlock: a world-readable file outside the policy" "errno EACCES"
  run "sandbox-exec best-effort.json -- payload read /root" \
    "$agent" sandbox-exec /tmp/best-effort.json -- "$payload" read /root
  expect_answer "read /root" "errno EACCES"
  run "sandbox-exec best-effort.json -- payload read $bundle/$(basename "$payload")" \
    "$agent" sandbox-exec /tmp/best-effort.json -- "$payload" read "$payload"
  expect_answer "the bundle is readable" "ok"
  run "sandbox-exec best-effort.json -- payload socket inet stream" \
    "$agent" sandbox-exec /tmp/best-effort.json -- "$payload" socket inet stream
  expect_answer "seccomp: socket inet stream under net none" "errno EAFNOSUPPORT"

  run "sandbox-exec required.json -- payload kill-parent (started as root)" \
    "$agent" sandbox-exec /tmp/required.json -- "$payload" kill-parent
  expect_answer "kill-parent, required, from root (the parent is root: DAC refuses too)" "errno EPERM"

  # Signal scoping proper: the agent started by nobody from a shell of nobody's (the trailing
  # `; true` keeps that shell alive as the payload's parent), so DAC would allow the signal.
  if [ "$expect" -ge 6 ]; then
    run "as nobody: sandbox-exec required.json -- payload kill-parent" \
      su nobody -s /bin/sh -c "'$agent' sandbox-exec /tmp/required.json -- '$payload' kill-parent; true"
    expect_answer "Landlock ABI 6 scope: kill-parent (same uid, parent outside the domain)" "errno EPERM"
    run "as nobody: sandbox-exec --config abi-max-5 best-effort.json -- payload kill-parent" \
      su nobody -s /bin/sh -c "'$agent' sandbox-exec --config /tmp/abi-max-5.json /tmp/best-effort.json -- '$payload' kill-parent; true"
    expect_answer "control: kill-parent without the scopes (landlock_abi_max 5, best-effort)" "ok"
    run "sandbox-exec --config abi-max-5 required.json -- payload status" \
      "$agent" sandbox-exec --config /tmp/abi-max-5.json /tmp/required.json -- "$payload" status
    refused "required policy with landlock_abi_max 5"
  fi
fi

# --- The integration suite (guest-suite.sh), when the matrix passed it.
if [ -n "${OARBANK_SUITE:-}" ]; then
  section "integration suite (filter: ${OARBANK_SUITE_FILTER:-*})"
  sh "$(dirname "$0")/guest-suite.sh"
  suite_rc=$?
  if [ "$suite_rc" -eq 0 ]; then
    pass "integration suite passed"
  else
    fail "integration suite exited $suite_rc"
  fi
fi

section "summary"
echo "OARBANK-CHECKS kernel=$kernel landlock=$actual expected=$expect passed=$passed failed=$failed skipped=$skipped"
[ "$failed" -eq 0 ]
