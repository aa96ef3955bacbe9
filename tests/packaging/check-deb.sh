#!/usr/bin/env bash
# Checks the .deb that scripts/package.sh built: its control fields, what it installs and
# where, the conffile and maintainer scripts, the unit (systemd-analyze verify, when
# present), and the packaged binary run against the packaged agent.json. Needs no root and
# changes nothing outside a temporary directory. Usage: check-deb.sh PATH.deb
set -uo pipefail

if [[ $# -ne 1 || ! -f $1 ]]; then
  echo "usage: $0 PATH.deb" >&2
  exit 64
fi
deb=$(realpath "$1")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/oarbank-check-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
control=$tmp/control
passed=0
failed=0

pass() {
  passed=$((passed + 1))
  echo "ok   $1"
}
fail() {
  failed=$((failed + 1))
  echo "FAIL $1${2:+: $2}"
}
# check NAME COMMAND...: passes when the command exits 0; its output is shown on failure.
check() {
  local name=$1 output
  shift
  if output=$("$@" 2>&1); then pass "$name"; else fail "$name" "$output"; fi
}

# ---- Control fields, contents, control members ----------------------------------------
field() { dpkg-deb -f "$deb" "$1"; }
check "Package is oarbank-agent" test "$(field Package)" = oarbank-agent
check "Version is set" test -n "$(field Version)"
check "Section is admin" test "$(field Section)" = admin
check "Architecture is this machine's" test "$(field Architecture)" = "$(dpkg --print-architecture)"
# Static: no shared library to depend on.
check "no Depends on shared libraries" test -z "$(field Depends)"

listing=$(dpkg-deb -c "$deb")
# "-rwxr-xr-x root/root 123 2024-01-01 00:00 ./usr/bin/oarbank-agent"
listed() {
  awk -v path="./$1" -v mode="$2" '$6 == path && $1 == mode && $2 == "root/root" {found = 1}
    END {exit !found}' <<<"$listing"
}
check "/usr/bin/oarbank-agent, 0755 root" listed usr/bin/oarbank-agent -rwxr-xr-x
# Issue 11: every line but a plain sandbox-exec or sandbox-run, which the agent execs.
check "its companion oarbank-agent-full, 0755 root" \
  listed usr/lib/oarbank-agent/oarbank-agent-full -rwxr-xr-x
check "the unit in /usr/lib/systemd/system" \
  listed "usr/lib/systemd/system/oarbank-agent@.service" -rw-r--r--
check "the slice in /usr/lib/systemd/system" listed usr/lib/systemd/system/oarbank.slice -rw-r--r--
check "the NFD report's service" listed usr/lib/systemd/system/oarbank-nfd.service -rw-r--r--
check "the NFD report's path unit" listed usr/lib/systemd/system/oarbank-nfd.path -rw-r--r--
check "the namespace stock's service" listed usr/lib/systemd/system/oarbank-sandbox-stock.service -rw-r--r--
check "the NFD report's helper, 0755 root" listed usr/lib/oarbank-agent/oarbank-nfd-features -rwxr-xr-x
check "/etc/oarbank/agent.json, 0644 root" listed etc/oarbank/agent.json -rw-r--r--
check "the example env file" listed usr/share/doc/oarbank-agent/examples/hello.env -rw-r--r--
check "docs/packaging.md" listed usr/share/doc/oarbank-agent/packaging.md -rw-r--r--
check "the bash completion" listed usr/share/bash-completion/completions/oarbank-agent -rw-r--r--
# Issue 16: the man page, the copyright and the changelog Debian policy asks for.
check "the man page" listed usr/share/man/man1/oarbank-agent.1.gz -rw-r--r--
check "/usr/share/doc/oarbank-agent/copyright" listed usr/share/doc/oarbank-agent/copyright -rw-r--r--
check "/usr/share/doc/oarbank-agent/changelog.Debian.gz" \
  listed usr/share/doc/oarbank-agent/changelog.Debian.gz -rw-r--r--
check "nothing owned by another user" \
  test -z "$(awk '$2 != "root/root"' <<<"$listing")"

mkdir -p "$control"
check "control members extract" dpkg-deb -e "$deb" "$control"
check "agent.json is a conffile" grep -qx /etc/oarbank/agent.json "$control/conffiles"
conffiles_listed() {
  local file
  while read -r file; do
    awk -v path=".$file" '$6 == path {found = 1} END {exit !found}' <<<"$listing" || {
      echo "$file is not in the package"
      return 1
    }
  done <"$control/conffiles"
}
check "every conffile is in the package" conffiles_listed
for script in postinst prerm postrm; do
  check "$script is executable" test -x "$control/$script"
  check "$script parses (sh -n)" sh -n "$control/$script"
  check "$script sets -e" grep -qx 'set -e' "$control/$script"
done
check "postinst makes /etc/oarbank/modules 0750" grep -q 'install -d -m 0750.*/etc/oarbank/modules' \
  "$control/postinst"
check "postinst reloads systemd only when it runs" grep -q '\[ -d /run/systemd/system \]' \
  "$control/postinst"

# ---- The extracted tree ------------------------------------------------------------------
mkdir -p "$root"
check "dpkg-deb -x" dpkg-deb -x "$deb" "$root"
agent=$root/usr/bin/oarbank-agent
unit=$root/usr/lib/systemd/system/oarbank-agent@.service
# "statically linked" or "static-pie linked", never "dynamically linked".
is_static() {
  local kind
  kind=$(file -b "$1")
  [[ $kind == *"statically linked"* || $kind == *"static-pie linked"* ]] || {
    echo "$kind"
    return 1
  }
}
check "the binary is static" is_static "$agent"
check "oarbank-agent-full is static" is_static "$root/usr/lib/oarbank-agent/oarbank-agent-full"
# The report below runs through it: the agent finds it in ../lib/oarbank-agent.
check "oarbank-agent --version, through oarbank-agent-full" "$agent" --version
# shellcheck disable=SC2016 # systemd's ${VAR} and $VAR, literally
exec_start='ExecStart=/usr/bin/oarbank-agent sandbox-run --id %i ${OARBANK_POLICY} -- $OARBANK_ARGV'
check "the unit runs the packaged binary" grep -qxF "$exec_start" "$unit"
check "the unit delegates its cgroup" grep -qx 'Delegate=yes' "$unit"
check "the unit stops sandbox-run first" grep -qx 'KillMode=mixed' "$unit"
no_user() { ! grep -n '^User=' "$unit"; }
check "the unit has no User=" no_user
stock_unit=$root/usr/lib/systemd/system/oarbank-sandbox-stock.service
check "the stock's unit runs the packaged binary's sandbox-stock" \
  grep -qx 'ExecStart=/usr/bin/oarbank-agent sandbox-stock' "$stock_unit"
check "the agent's instances start after the stock" grep -qx 'After=.* oarbank-sandbox-stock.service' "$unit"
check "postinst enables the stock" grep -q 'systemctl enable oarbank-sandbox-stock.service' "$control/postinst"
check "prerm stops the stock on removal" grep -q 'oarbank-sandbox-stock.service' "$control/prerm"
check "postrm's purge removes the stock's enablement link" \
  grep -q 'multi-user.target.wants/oarbank-sandbox-stock.service' "$control/postrm"

if command -v systemd-analyze >/dev/null; then
  # The unit names /usr/bin/oarbank-agent, which this machine need not have (and --root=
  # wants a whole systemd tree for sysinit.target): verify a copy that names the extracted
  # binary instead, as an instance. verify exits 0 on unknown keys and prints a warning, so
  # any output is a failure.
  units=$tmp/units
  mkdir -p "$units"
  sed "s#/usr/bin/oarbank-agent#$agent#g" "$unit" >"$units/oarbank-agent@check.service"
  cp "$root/usr/lib/systemd/system/oarbank.slice" "$root/usr/lib/systemd/system/oarbank-nfd.path" "$units/"
  sed "s#/usr/lib/oarbank-agent/#$root/usr/lib/oarbank-agent/#g" \
    "$root/usr/lib/systemd/system/oarbank-nfd.service" >"$units/oarbank-nfd.service"
  sed "s#/usr/bin/oarbank-agent#$agent#g" "$stock_unit" >"$units/oarbank-sandbox-stock.service"
  verify() {
    local output
    if ! output=$(systemd-analyze verify "$units/oarbank-agent@check.service" \
      "$units/oarbank.slice" "$units/oarbank-nfd.service" "$units/oarbank-nfd.path" \
      "$units/oarbank-sandbox-stock.service" 2>&1) ||
      [[ -n $output ]]; then
      echo "$output"
      return 1
    fi
  }
  check "systemd-analyze verify: no error, no warning" verify
else
  echo "skip systemd-analyze verify (not installed)"
fi

# Issue 16: the man page renders (man -l, as `man oarbank-agent` would once installed) and
# shows the sub-commands and the exit status; copyright is DEP-5 and grants no license the
# owners have not chosen; the changelog's version is the package's.
doc=$root/usr/share/doc/oarbank-agent
man_page() {
  local text
  # C locale: ASCII hyphens; wide, and runs of spaces (justification) squeezed.
  text=$(LC_ALL=C MANWIDTH=200 man -l "$root/usr/share/man/man1/oarbank-agent.1.gz" 2>&1) ||
    { echo "$text"; return 1; }
  text=$(tr -s ' ' <<<"$text")
  for want in "oarbank-agent - run third-party modules" sandbox-run sandbox-exec sandbox-check \
    sandbox-report sandbox-ctl egress-proxy "EXIT STATUS" "$(field Version)"; do
    grep -qF -- "$want" <<<"$text" || { echo "no \"$want\" in the page"; return 1; }
  done
}
if command -v man >/dev/null; then
  check "man -l oarbank-agent.1.gz renders the sub-commands and exit status" man_page
else
  echo "skip man -l (man-db not installed)"
fi
check "copyright is DEP-5" grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$doc/copyright"
check "copyright grants no license" grep -qx 'License: none granted' "$doc/copyright"
changelog_version() {
  local first
  first=$(gzip -dc "$doc/changelog.Debian.gz" | head -1)
  [[ $first == "oarbank-agent ($(field Version)) "* ]] || { echo "$first"; return 1; }
}
check "changelog.Debian.gz names the package's version" changelog_version

# The packaged binary reads the packaged (commented) agent.json.
check "sandbox-report --config agent.json exits 0" \
  "$agent" sandbox-report --config "$root/etc/oarbank/agent.json"
check "sandbox-report --json --config agent.json exits 0" \
  "$agent" sandbox-report --json --config "$root/etc/oarbank/agent.json"
# The example policy is valid: sandbox-check says 0 (runnable) or 70 (its bundle is not
# on this machine, or the node lacks something), never 64.
check_example() {
  local status=0
  "$agent" sandbox-check --config "$root/etc/oarbank/agent.json" \
    "$root/usr/share/doc/oarbank-agent/examples/hello.policy.json" >/dev/null || status=$?
  [[ $status -eq 0 || $status -eq 70 ]] || {
    echo "exit $status"
    return 1
  }
}
check "the example policy is valid (sandbox-check: 0 or 70)" check_example
check "the NFD helper parses (sh -n)" sh -n "$root/usr/lib/oarbank-agent/oarbank-nfd-features"
# The NFD helper writes the file whole; a report that fails otherwise than 70 removes it.
nfd_helper() {
  local out=$tmp/nfd/features.d/oarbank-sandbox status=0
  sed "s#/usr/bin/oarbank-agent#$agent#" "$root/usr/lib/oarbank-agent/oarbank-nfd-features" >"$tmp/nfd-helper"
  OARBANK_NFD_FILE=$out OARBANK_AGENT_CONFIG=$root/etc/oarbank/agent.json sh "$tmp/nfd-helper" || status=$?
  [[ $status -eq 0 || $status -eq 70 ]] || { echo "exit $status"; return 1; }
  grep -q '^feature.node.kubernetes.io/oarbank-sandbox.filesystem=' "$out" || { cat "$out"; return 1; }
  [[ -z $(find "$tmp/nfd" -name '.oarbank-sandbox.*') ]] || { echo "a temporary file is left"; return 1; }
  echo '{ "no_such_key": 1 }' >"$tmp/bad.json"
  status=0
  OARBANK_NFD_FILE=$out OARBANK_AGENT_CONFIG=$tmp/bad.json sh "$tmp/nfd-helper" 2>/dev/null || status=$?
  [[ $status -eq 78 && ! -e $out ]] || { echo "bad agent.json: exit $status, file left: $([[ -e $out ]] && echo yes)"; return 1; }
}
check "the NFD helper writes the report, and removes it when agent.json is invalid" nfd_helper

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
