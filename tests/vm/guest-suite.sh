#!/bin/sh
# Runs inside a VM booted by run-in-vm.sh (busybox sh, as root), called by guest-checks.sh:
# the GoogleTest integration suite (oarbank-integration-tests) on this kernel. The suite runs
# the real oarbank-agent with the probe payload inside and computes its expectations from the
# kernel's Landlock ABI, so the same binary is the check on every kernel.
#
# Environment (passed by run-kernel-matrix.sh with --env):
#   OARBANK_SUITE          the suite binary (static; the agent and the payload lie at the
#                          absolute paths baked into it)
#   OARBANK_SUITE_FILTER   a --gtest_filter (default: every test)
# Prints the suite's brief log, every skipped test with its reason, then one summary line
#   OARBANK-SUITE ran=N passed=N failed=N skipped=N seconds=S filter=...
# and exits with the suite's status (1 when the suite did not report).
set -u

suite=${OARBANK_SUITE:?OARBANK_SUITE not set}
filter=${OARBANK_SUITE_FILTER:-*}

# What a Debian system has and the busybox initramfs lacks, for the base-system rows: /lib
# (a link to usr/lib as on Debian 12), /usr/lib, /opt, /home, /usr/bin/true, and devpts for
# the terminal tests (posix_openpt); /dev/shm, where sandbox-run as root mounts each
# module's own (issue 12: a node without it refuses such runs, 70).
mkdir -p /usr/lib /opt /home /usr/bin /dev/pts /dev/shm
[ -e /lib ] || ln -s usr/lib /lib
[ -e /usr/bin/true ] || ln -s /bin/busybox /usr/bin/true
if ! grep -q ' /dev/pts devpts ' /proc/mounts; then
  mount -t devpts -o gid=5,mode=0620,ptmxmode=0666 devpts /dev/pts || echo "guest-suite: mount devpts failed"
fi

uptime_s() { cut -d' ' -f1 /proc/uptime; }
start=$(uptime_s)
"$suite" --gtest_brief=1 --gtest_color=no "--gtest_filter=$filter" --gtest_output=xml:/tmp/suite.xml
rc=$?
seconds=$(awk -v s="$start" -v e="$(uptime_s)" 'BEGIN { printf "%.1f", e - s }')

if [ ! -s /tmp/suite.xml ]; then
  echo "guest-suite: the suite wrote no report (exit $rc)"
  echo "OARBANK-SUITE ran=0 passed=0 failed=0 skipped=0 seconds=$seconds exit=$rc filter=$filter"
  [ "$rc" -ne 0 ] || rc=1
  exit "$rc"
fi

# One line per test case from the XML report: its result and, for a skip, the reason.
# gtest writes <testcase name=".." status="run" result="completed|skipped" ... classname="..">,
# then <failure .../> or <skipped message="FILE:LINE&#x0A;REASON"/> inside it.
awk '
  function attr(line, key,   m) {
    if (match(line, " " key "=\"[^\"]*\"")) { m = substr(line, RSTART + length(key) + 3, RLENGTH - length(key) - 4); return m }
    return ""
  }
  function flush() {
    if (name == "") return
    ran++
    if (failed_case) failed++
    else if (result == "skipped") { skipped++; printf "skipped: %s.%s: %s\n", cls, name, reason }
    else passed++
    name = ""
  }
  /<testcase / { flush(); name = attr($0, "name"); cls = attr($0, "classname"); result = attr($0, "result"); failed_case = 0; reason = "" }
  /<failure / { failed_case = 1 }
  /<skipped / {
    reason = attr($0, "message")
    gsub(/&#x0A;/, " ", reason); gsub(/&quot;/, "\"", reason); gsub(/&apos;/, "\x27", reason); gsub(/&lt;/, "<", reason); gsub(/&gt;/, ">", reason); gsub(/&amp;/, "\\&", reason)
    sub(/^[^ ]*:[0-9]+ /, "", reason)
  }
  END {
    flush()
    printf "OARBANK-SUITE ran=%d passed=%d failed=%d skipped=%d seconds=%s exit=%d filter=%s\n", ran, passed, failed, skipped, seconds, rc, filter
  }
' seconds="$seconds" rc="$rc" filter="$filter" /tmp/suite.xml
exit "$rc"
