#!/usr/bin/env bash
# The whole test suite: installs what is needed, builds, runs the unit and integration tests
# on this machine's kernel, the .deb's checks, the kernel matrix under qemu (tests/vm) and the
# .deb in a booted systemd guest (tests/vm, 6.12-systemd), then the tests again under
# AddressSanitizer and UndefinedBehaviorSanitizer, then the fuzzers (policy, configuration and proxy parsers) briefly. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each "=== stage" line ends the stage before it; the times are printed last (and on failure),
# so that a slow run shows where its time went.
stage_name='' stage_start=$SECONDS timings=()
stage() {
  [[ -z $stage_name ]] || timings+=("$(printf '%5ds  %s' $((SECONDS - stage_start)) "$stage_name")")
  stage_name=$1 stage_start=$SECONDS
  [[ $# -lt 2 ]] || echo "=== $2"
}
print_timings() {
  stage ''
  echo "=== stage times (total ${SECONDS}s)"
  printf '%s\n' "${timings[@]}"
}
# behind LOG COMMAND...: runs COMMAND at the lowest priority, output to LOG, behind the stages
# that follow until `collect LOG` waits for it, shows LOG and fails if it failed; several may
# run behind at once, each known by its LOG. For builds and lint: the stages they run behind
# leave a core mostly idle (ctest waits on launches, qemu emulates its one CPU on one host
# thread), and keep their CPU whenever they want it. SCHED_IDLE as well as nice 19: nice alone
# is nothing when this script already runs at nice 19.
declare -A behind_pids=()
idle=()
if chrt -i 0 true 2>/dev/null; then idle=(chrt -i 0); fi
behind() {
  local log=$1
  shift
  mkdir -p "$(dirname "$log")"
  (
    trap - EXIT
    exec nice -n 19 "${idle[@]}" "$@"
  ) >"$log" 2>&1 &
  behind_pids[$log]=$!
}
collect() {
  local log=$1 status=0
  wait "${behind_pids[$log]}" || status=$?
  unset "behind_pids[$log]"
  cat "$log"
  ((status == 0)) || { echo "failed (exit $status): see $log" >&2; exit 1; }
}
# ninja and run-clang-tidy, on SIGTERM, stop the processes they started.
trap '((${#behind_pids[@]} == 0)) || kill "${behind_pids[@]}" 2>/dev/null || true; print_timings' EXIT

stage deps
./scripts/install-deps.sh
jobs=$(nproc)

stage build "build (Release, static launcher)"
# The benchmarks are built and run by bench/run-*.sh in build-bench, not here. A unity build
# (CMAKE_UNITY_BUILD: eight of src/'s files a compiler run, as the ASan build below): each
# system header (nlohmann-json, asio, fmt, CLI11) parsed and instantiated once a batch, not
# once a file. Measured from scratch on 2 cores: 200 s and 387 s of CPU against 287 s and 557 s
# one file a run. The whole suite passes on both, and lean-launch-path checks the launch binary
# either way (no CLI11, no <iostream>, in launch order). A developer's build stays one file a
# run (a change recompiles its file, not its batch).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DOARBANK_BENCH=OFF \
  -DCMAKE_UNITY_BUILD=ON >/dev/null
./scripts/build.sh

# The format now (seconds). The ASan build and then clang-tidy over src/ run behind the stages
# that follow (minutes; they need nothing from them): the ASan build is a unity build
# (CMAKE_UNITY_BUILD: several source files a compiler run, about 30 % less CPU than one each),
# and clang-tidy reads its compile_commands.json, whose unity files parse and match each system
# header once for several of src/'s files (scripts/lint.sh: under half the CPU of one run a file).
stage lint "lint: the tree's format (clang-format); the ASan build and clang-tidy over src/ behind the stages that follow"
./scripts/lint.sh --format-only
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DOARBANK_SANITIZE=ON -DOARBANK_BENCH=OFF \
  -DCMAKE_UNITY_BUILD=ON >/dev/null
behind build-asan/ci-build.log bash -c "ninja -C build-asan -j $jobs && echo '=== clang-tidy' && ./scripts/lint.sh --tidy-only build-asan"

stage tests "tests"
ctest --test-dir build --output-on-failure -j "$jobs"

stage e2e "egress whole-system tests (test hosts in network namespaces, dnsmasq, curl, python3 and node inside sandbox-run; the request-smuggling corpus)"
tests/e2e/run-egress-e2e.sh build

stage deb "the .deb: build it and check it"
deb=$(./scripts/package.sh)
tests/packaging/check-deb.sh "$deb"

stage vm "the kernel matrix: Debian 12's 6.1 (Landlock ABI 2) and 6.12 (ABI 6) kernels, and 6.12 with Landlock disabled, under qemu, with the integration suite in each"
tests/vm/run-kernel-matrix.sh build 6.1 6.12 6.12-no-ll

# The .deb from the deb stage, under systemd: its root file system is built on the first run on
# a machine (debootstrap, about a minute) and cached with the kernels.
stage vm-systemd "the production path: a Debian 12 guest booted with systemd on the 6.12 kernel, the .deb installed, modules run as oarbank-agent@ID.service"
OARBANK_VM_DEB=$deb tests/vm/run-kernel-matrix.sh build 6.12-systemd

stage asan-build-and-tidy "build (ASan + UBSan) and clang-tidy over src/: what is left of them after the stages they ran behind"
collect build-asan/ci-build.log
stage asan-tests "tests under ASan + UBSan"
# The fuzzers' clang build runs behind these tests.
fuzz=0
if [[ -x scripts/run-fuzz.sh ]]; then
  fuzz=1
  behind build-fuzz/ci-build.log ./scripts/run-fuzz.sh --build
fi
# Every test, but the integration suite under the node's ABI caps (and the report's agreement
# with the launcher at every cap) only in the Release run above: under the sanitizers the same
# agent code runs uncapped, and the whole run stays well under 15 minutes. CPython's own
# regression tests inside a module (30 s) run in the Release run only: what they prove is
# CPython's behaviour in the sandbox, and the agent's path under them is every other
# ModuleWorld test's.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" \
  -E 'LandlockCap/.*/cap[0-6]|LandlockCap/ReportAgreesWithTheLauncher|ModuleWorld.CPythonsRegressionTestsPassInside'

if ((fuzz)); then
  stage fuzz "fuzzing the policy, configuration and proxy parsers"
  collect build-fuzz/ci-build.log
  ./scripts/run-fuzz.sh "${OARBANK_FUZZ_SECONDS:-20}"
fi
echo "=== all tests passed"
