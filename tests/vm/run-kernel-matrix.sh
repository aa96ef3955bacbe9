#!/usr/bin/env bash
# Runs oarbank-agent on real Debian 12 kernels under qemu and checks what each can enforce:
#   6.1            Landlock ABI 2: below the filesystem floor, the launcher refuses (70)
#   6.12           Landlock ABI 6: enforced (no_new_privs, seccomp, Landlock fs, IPC scopes)
#   6.12-no-ll     6.12 booted with an lsm= list without landlock: "disabled", refused (70)
#   6.12-systemd   6.12 booting a Debian 12 root (debootstrap, fetch-rootfs.sh) with systemd as
#                  PID 1: the .deb installed, modules run as oarbank-agent@ID.service on the
#                  unified cgroup2 layout, stop/kill/restart, two units, the report, the NFD
#                  file, an upgrade and a purge (guest-systemd.sh)
# In each busybox guest the integration suite (tests/oarbank-integration-tests) runs too: on
# 6.12 all of it but the node caps it would simulate at or below the kernel's own ABI 6
# (LandlockCap/*/cap3 to cap6: landlock_abi_max is the agent's own rule, which the host's run
# proves on every cap; cap6 is the guest's uncapped run again), the tests meaningful where no
# launch can run (every one refused with 70) on the others.
#
# Usage: tests/vm/run-kernel-matrix.sh BUILD_DIR [CASE...]
#   BUILD_DIR holds oarbank-agent, tests/oarbank-probe-payload and
#   tests/oarbank-integration-tests (static builds boot as they are; dynamic ones get the
#   libraries ldd names copied in), and for 6.12-systemd the .deb (scripts/package.sh puts it
#   in BUILD_DIR/packages). CASEs: a subset of the above.
# Environment: OARBANK_VM_CACHE (kernel cache, see fetch-kernels.sh), OARBANK_VM_TIMEOUT
# (seconds per boot, default 300), OARBANK_VM_SUITE=0 (leave the integration suite out),
# OARBANK_VM_SUITE_FILTER (a --gtest_filter for every case instead of the case's own),
# OARBANK_VM_DEB (the .deb for 6.12-systemd instead of BUILD_DIR/packages/*.deb).
# Prints each guest's console, then one summary line per case; exits 1 if any case failed.
# Needs qemu-system-x86, busybox-static and a C compiler with a static libc (build-essential);
# 6.12-systemd needs debootstrap and root (or passwordless sudo) the first time, to build the
# cached root file system.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "run-kernel-matrix: $*" >&2; exit 1; }

[[ $# -ge 1 ]] || { sed -n '14,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build_dir=$(cd "$1" && pwd) || die "no build folder $1"
shift
all_cases=(6.1 6.12 6.12-no-ll 6.12-systemd)
cases=("$@")
((${#cases[@]})) || cases=("${all_cases[@]}")

agent="$build_dir/oarbank-agent"
# Issue 11: the agent execs oarbank-agent-full, beside it, for every line but a plain
# sandbox-exec or sandbox-run (help, --explain, sandbox-report, ...): the guest gets both.
agent_full="$build_dir/oarbank-agent-full"
payload="$build_dir/tests/oarbank-probe-payload"
[[ -x $agent ]] || die "$agent is missing (ninja -C $build_dir oarbank-agent)"
[[ -x $agent_full ]] || die "$agent_full is missing (ninja -C $build_dir oarbank-agent)"
[[ -x $payload ]] || die "$payload is missing (ninja -C $build_dir oarbank-probe-payload)"
# The integration suite has the agent's and the payload's absolute paths baked in; the guest
# gets both at their own paths, so the suite must be the one built with them.
# (The systemd case runs the packaged agent, not these.)
suite=''
if [[ ${OARBANK_VM_SUITE:-1} != 0 ]] && printf '%s\n' "${cases[@]}" | grep -qvx 6.12-systemd; then
  suite="$build_dir/tests/oarbank-integration-tests"
  skipstep="$build_dir/tests/oarbank-agent-skipstep"
  [[ -x $suite ]] || die "$suite is missing (ninja -C $build_dir oarbank-integration-tests; OARBANK_VM_SUITE=0 leaves it out)"
  [[ -x $skipstep ]] || die "$skipstep is missing (ninja -C $build_dir oarbank-agent-skipstep)"
  for baked in "$agent" "$payload" "$skipstep"; do
    grep -aqF "$baked" "$suite" || die "$suite was not built with $baked (a build folder reached by another path?)"
  done
fi
# The suite's subset where Landlock cannot be used (below ABI 3: every launch is refused with
# 70, naming the filesystem row): the refusals under caps 0-2, the exit codes decided before
# the kernel is asked (usage, invalid policy, invalid configuration), the report and its
# agreement with sandbox-check and sandbox-exec at every cap, and the leftover check.
below_floor_filter='*NodesBelowAbi3*:Usage.*:InvalidPolicy.*:InvalidConfig.*:Report.*:*ReportAgreesWithTheLauncher*:NothingLeftBehindTest.*'
below_floor_filter+='-Usage.OptionsAfterDoubleDashBelongToTheModule'
# 6.12's filter: the whole suite but the simulated caps (about a third of its TCG time).
below_kernel_caps_filter='*-*/cap3:*/cap4:*/cap5:*/cap6'
cache_dir=${OARBANK_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/oarbank-vm}

work=$(mktemp -d "${TMPDIR:-/tmp}/oarbank-matrix.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The Landlock helper, static so it runs in the bare guest.
helper="$work/landlock-abi"
cc -static -O2 -o "$helper" "$here/landlock-abi.c" || die "cannot build $here/landlock-abi.c (cc -static)"

# The files for the guest: the binaries at their own paths, and for a dynamic build the
# libraries and loader ldd names (at their own paths too).
files=(--file "$agent" --file "$agent_full" --file "$payload" --file "$helper:/oarbank-vm/landlock-abi")
[[ -z $suite ]] || files+=(--file "$suite" --file "$skipstep" --file "$here/guest-suite.sh:/oarbank-vm/guest-suite.sh")
declare -A libs=()
for bin in "$agent" "$agent_full" "$payload" ${suite:+"$suite" "$skipstep"}; do
  if readelf -l "$bin" 2>/dev/null | grep -q INTERP; then
    while read -r lib; do libs[$lib]=1; done < <(ldd "$bin" | grep -o '/[^ ]*' || true)
  fi
done
for lib in "${!libs[@]}"; do files+=(--file "$lib"); done
((${#libs[@]} == 0)) || echo "run-kernel-matrix: dynamic build: copying ${#libs[@]} libraries into the guest"

# The kernels, fetched once for all cases.
need_series=()
for c in "${cases[@]}"; do
  case "$c" in
    6.1) need_series+=(6.1) ;;
    6.12 | 6.12-no-ll | 6.12-systemd) need_series+=(6.12) ;;
    *) die "unknown case '$c' (known: ${all_cases[*]})" ;;
  esac
done
mapfile -t need_series < <(printf '%s\n' "${need_series[@]}" | sort -u)
fetched=$("$here/fetch-kernels.sh" "$cache_dir" "${need_series[@]}") ||
  echo "run-kernel-matrix: could not fetch every kernel; the cases without one fail" >&2
declare -A vmlinuz=() kpkg=()
while read -r series path pkg ver; do
  [[ -n ${series:-} ]] || continue
  vmlinuz[$series]=$path
  kpkg[$series]="$pkg $ver"
done <<<"$fetched"

# The systemd case: its root file system (cached), the package under test, and the same
# package as a lower version (0.1.0~prev for 0.1.0) to upgrade from. The previous version is a
# repack, not an older build: the upgrade checks what dpkg and the maintainer scripts do with
# the operator's agent.json and running modules, not what changed in the code.
rootfs='' deb='' deb_prev=''
if printf '%s\n' "${cases[@]}" | grep -qx 6.12-systemd; then
  rootfs=$("$here/fetch-rootfs.sh" "$cache_dir") ||
    echo "run-kernel-matrix: could not build the systemd guest's root file system; 6.12-systemd fails" >&2
  if [[ -n ${OARBANK_VM_DEB:-} ]]; then
    deb=$OARBANK_VM_DEB
  else
    debs=("$build_dir"/packages/*.deb)
    [[ ${#debs[@]} -eq 1 && -f ${debs[0]} ]] && deb=${debs[0]}
  fi
  if [[ -n $deb && -f $deb ]]; then
    mkdir "$work/prev"
    dpkg-deb -R "$deb" "$work/prev/tree"
    sed -i 's/^Version: \(.*\)$/Version: \1~prev/' "$work/prev/tree/DEBIAN/control"
    deb_prev=$work/prev/oarbank-agent-prev.deb
    dpkg-deb --root-owner-group -b "$work/prev/tree" "$deb_prev" >/dev/null
  else
    echo "run-kernel-matrix: no .deb for 6.12-systemd (scripts/package.sh $build_dir, or OARBANK_VM_DEB); it fails" >&2
    deb=''
  fi
fi

# lsm= without landlock: the 6.12 package's CONFIG_LSM less landlock.
lsm_without_landlock() {
  local config="$cache_dir/$1/config" list
  list=$(sed -n 's/^CONFIG_LSM="\(.*\)"$/\1/p' "$config")
  [[ -n $list ]] || return 1
  echo "$list" | tr ',' '\n' | grep -vx landlock | paste -sd, -
}

summary=()
failed=0
for c in "${cases[@]}"; do
  append='' series=$c expect='' filter=$below_floor_filter limits=0
  case "$c" in
    6.1) expect=2 ;;
    # The whole suite, and cgroup2 is whole there: the hard-limit tests must run, not skip.
    6.12) expect=6 filter=$below_kernel_caps_filter limits=1 ;;
    6.12-systemd) series=6.12 expect=6 ;;
    6.12-no-ll)
      series=6.12 expect=disabled
      if lsm=$(lsm_without_landlock 6.12); then append="lsm=$lsm"; fi
      ;;
  esac
  filter=${OARBANK_VM_SUITE_FILTER:-$filter}
  suite_env=()
  [[ -z $suite ]] || suite_env=(--env "OARBANK_SUITE=$suite" --env "OARBANK_SUITE_FILTER=$filter"
    --env "OARBANK_EXPECT_HARD_LIMITS=$limits")
  echo
  echo "######## case $c: kernel ${kpkg[$series]:-(none)}, expect Landlock $expect${append:+, $append}"
  start=$(date +%s.%N)
  rc=0
  log="$work/$c.log"
  if [[ -z ${vmlinuz[$series]:-} ]]; then
    echo "no $series kernel (see fetch-kernels.sh above)" | tee "$log"
    rc=1
  elif [[ $c == 6.12-no-ll && -z $append ]]; then
    echo "no CONFIG_LSM in $cache_dir/$series/config: cannot write an lsm= list without landlock" | tee "$log"
    rc=1
  elif [[ $c == 6.12-systemd ]]; then
    if [[ -z $rootfs || -z $deb ]]; then
      echo "no root file system or no .deb (see above)" | tee "$log"
      rc=1
    else
      "$here/run-in-vm.sh" --kernel "${vmlinuz[$series]}" --rootfs "$rootfs" \
        --timeout "${OARBANK_VM_TIMEOUT:-300}" --memory 1024 \
        --guest-script "$here/guest-systemd.sh" \
        --file "$deb:/oarbank-vm/oarbank-agent.deb" --file "$deb_prev:/oarbank-vm/oarbank-agent-prev.deb" \
        --env OARBANK_DEB=/oarbank-vm/oarbank-agent.deb \
        --env OARBANK_DEB_PREV=/oarbank-vm/oarbank-agent-prev.deb 2>&1 | tee "$log" || rc=${PIPESTATUS[0]}
    fi
  else
    "$here/run-in-vm.sh" --kernel "${vmlinuz[$series]}" ${append:+--append "$append"} \
      --timeout "${OARBANK_VM_TIMEOUT:-300}" --memory 1024 \
      --guest-script "$here/guest-checks.sh" "${files[@]}" "${suite_env[@]}" \
      --env "OARBANK_AGENT=$agent" --env "OARBANK_PAYLOAD=$payload" \
      --env "OARBANK_LANDLOCK_ABI_HELPER=/oarbank-vm/landlock-abi" \
      --env "OARBANK_EXPECT_LANDLOCK_ABI=$expect" 2>&1 | tee "$log" || rc=${PIPESTATUS[0]}
  fi
  elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
  checks=$(sed -n 's/^OARBANK-CHECKS //p' "$log" | tail -n1)
  suite_line=$(sed -n 's/^OARBANK-SUITE \(.*\) filter=.*$/\1/p' "$log" | tail -n1)
  if [[ $rc -eq 0 ]]; then
    verdict=PASS
  else
    verdict="FAIL (exit $rc)"
    failed=1
  fi
  summary+=("$(printf '%-4s %-11s %6ss  expect=%-8s %s' "${verdict%% *}" "$c" "$elapsed" "$expect" "${checks:-no checks summary${verdict#PASS}}")")
  if [[ -n $suite && $c != 6.12-systemd ]]; then
    summary[-1]+=$'\n'"$(printf '%28s suite (%s): %s' '' "$(case "$filter" in '*') echo all ;; "$below_kernel_caps_filter") echo "all but the simulated caps" ;; "$below_floor_filter") echo below-floor subset ;; *) echo "$filter" ;; esac)" "${suite_line:-no suite summary}")"
  fi
  if [[ $rc -ne 0 ]]; then
    grep -E '^(FAIL|\[  FAILED  \] [^0-9])' "$log" | sed "s/^/  [$c] /" >"$work/$c.fails" || true
  fi
done

echo
echo "######## kernel matrix summary"
for i in "${!summary[@]}"; do
  echo "${summary[$i]}"
  [[ ! -s "$work/${cases[$i]}.fails" ]] || cat "$work/${cases[$i]}.fails"
done
exit "$failed"
