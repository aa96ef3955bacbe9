#!/usr/bin/env bash
# Issue 11: the launch binary stays lean (src/cli/main.cpp, docs/performance.md). oarbank-agent
# links no CLI11 and no translation unit that includes <iostream> (GCC 12 constructs an
# std::ios_base::Init at start-up for each), is static when the build is, runs the plain
# sandbox-exec and sandbox-run lines with no other binary (no extra exec), and hands every
# other line to oarbank-agent-full beside it. Linked by lld, its launch order
# (src/cli/launch-order.txt, bench/make-launch-order.sh) is current: nine in ten of the
# functions it names are the binary's, and they lie together at the start of its text.
#
#   tests/lean/lean_launch_test.sh AGENT FULL STATIC(ON|OFF) [ORDER_FILE LLD(ON|OFF)]
set -uo pipefail
agent=$1 full=$2 static=$3 order=${4:-} lld=${5:-OFF}
failed=0
fail() { echo "FAIL: $*"; failed=1; }
pass() { echo "ok: $*"; }

symbols=$(nm "$agent" 2>/dev/null) || { echo "FAIL: nm $agent (a stripped binary?)"; exit 1; }
# _ZNSt8ios_base4InitC1Ev / C2Ev: the constructor every <iostream> unit calls at start-up.
if grep -Eq '_ZNSt8ios_base4InitC[12]Ev' <<<"$symbols"; then
  fail "oarbank-agent links std::ios_base::Init::Init(): $(grep -E '_ZNSt8ios_base4InitC[12]Ev' <<<"$symbols" | head -3 | tr '\n' ' ')"
else
  pass "no std::ios_base::Init constructor in oarbank-agent"
fi
# Any symbol in namespace CLI (mangled _ZN3CLI..., or CLI:: in a template argument: 3CLI).
if grep -Eq '(_ZN|N|I)3CLI' <<<"$symbols"; then
  fail "oarbank-agent links CLI11: $(grep -E '(_ZN|N|I)3CLI' <<<"$symbols" | head -3 | tr '\n' ' ')"
else
  pass "no CLI11 symbol in oarbank-agent"
fi
# The check itself must see what it looks for: the full binary has both.
grep -Eq '(_ZN|N|I)3CLI' <<<"$(nm "$full")" || fail "the check sees no CLI11 symbol in $full either"
grep -Eq '_ZNSt8ios_base4InitC[12]Ev' <<<"$(nm "$full")" ||
  fail "the check sees no std::ios_base::Init in $full either"
if [[ $static == ON ]]; then
  if readelf -l "$agent" | grep -q INTERP; then fail "oarbank-agent is not static"; else pass "oarbank-agent is static"; fi
fi
if [[ $static == ON && $lld == ON && -n $order ]]; then
  # The ordered functions the binary has, and how many of them lie within 1 MiB of the first:
  # together, about the 500 KiB they are, not spread over the 2.9 MiB of text (a few, in
  # sections no link reorders, .init, .fini and glibc's __libc_freeres_fn, lie apart).
  read -r named found together < <(nm "$agent" | python3 -c '
import sys
want = {l.strip() for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")}
where = {}
for line in sys.stdin:
    f = line.split()
    if len(f) == 3 and f[1] in "tTwWiI" and f[2] in want:
        where.setdefault(f[2], int(f[0], 16))
low = min(where.values(), default=0)
print(len(want), len(where), sum(1 for a in where.values() if a - low < 1 << 20))' "$order")
  if ((found * 10 >= named * 9)); then
    pass "launch order: $found of its $named functions are oarbank-agent's"
  else
    fail "launch order: only $found of its $named functions are oarbank-agent's: $order is stale (run bench/make-launch-order.sh)"
  fi
  if ((together * 100 >= found * 98)); then
    pass "launch order: $together of them lie within 1 MiB"
  else
    fail "launch order: only $together of $found lie within 1 MiB: the link did not follow $order"
  fi
fi

# Alone in a directory, without oarbank-agent-full: the plain lines still run (so they exec
# nothing but the module), and every other line fails with one line and exit 70.
tmp=$(mktemp -d /tmp/oarbank-lean-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
cp "$agent" "$tmp/oarbank-agent"
echo '{"bundle": "/usr/bin", "ipc_isolation": "best-effort"}' >"$tmp/policy.json"
chmod 644 "$tmp/policy.json"
export OARBANK_AGENT_CONFIG= OARBANK_STATE_DIR="$tmp/state"
out=$("$tmp/oarbank-agent" sandbox-exec "$tmp/policy.json" -- /bin/echo plain-exec 2>&1)
[[ $? == 0 && $out == plain-exec ]] && pass "plain sandbox-exec runs without oarbank-agent-full" ||
  fail "plain sandbox-exec without oarbank-agent-full: $out"
out=$("$tmp/oarbank-agent" sandbox-run "$tmp/policy.json" -- /bin/echo plain-run 2>&1)
[[ $? == 0 && $out == plain-run ]] && pass "plain sandbox-run runs without oarbank-agent-full" ||
  fail "plain sandbox-run without oarbank-agent-full: $out"
out=$("$tmp/oarbank-agent" --version 2>&1)
rc=$?
if [[ $rc == 70 && $(wc -l <<<"$out") == 1 && $out == *"cannot run oarbank-agent-full"* ]]; then
  pass "--version without oarbank-agent-full: exit 70, one line"
else
  fail "--version without oarbank-agent-full: exit $rc: $out"
fi
# Beside it (the build tree's layout), and in ../lib/oarbank-agent (the package's): the same
# answers as oarbank-agent-full itself gives.
for layout in beside package; do
  if [[ $layout == beside ]]; then
    cp "$full" "$tmp/oarbank-agent-full"
  else
    rm -f "$tmp/oarbank-agent-full"
    mkdir -p "$tmp/bin" "$tmp/lib/oarbank-agent"
    cp "$agent" "$tmp/bin/oarbank-agent"
    cp "$full" "$tmp/lib/oarbank-agent/oarbank-agent-full"
  fi
  a=$tmp/oarbank-agent
  [[ $layout == package ]] && a=$tmp/bin/oarbank-agent
  for line in "--version" "sandbox-exec --explain $tmp/policy.json -- /bin/true" "sandbox-exec $tmp/policy.json /bin/true" "no-such-command"; do
    # shellcheck disable=SC2086
    got=$("$a" $line 2>&1; echo "exit $?")
    # shellcheck disable=SC2086
    want=$("$full" $line 2>&1; echo "exit $?")
    [[ $got == "$want" ]] && pass "$layout: oarbank-agent $line answers as oarbank-agent-full" ||
      fail "$layout: oarbank-agent $line: got [$got] want [$want]"
  done
done
exit $failed
