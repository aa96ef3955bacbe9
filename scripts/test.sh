#!/usr/bin/env bash
# The whole test suite: installs what is needed, builds, runs the unit and integration tests
# on this machine's kernel, the kernel matrix under qemu (tests/vm), then the tests again under
# AddressSanitizer and UndefinedBehaviorSanitizer, then the policy parser's fuzzer briefly. Exits non-zero on any failure.
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
trap print_timings EXIT

stage deps
./scripts/install-deps.sh
jobs=$(nproc)

stage build "build (Release, static launcher)"
# The benchmarks are built and run by bench/run-*.sh in build-bench, not here.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DOARBANK_BENCH=OFF >/dev/null
./scripts/build.sh
stage tests "tests"
ctest --test-dir build --output-on-failure -j "$jobs"

stage e2e "egress whole-system tests (test hosts in network namespaces, dnsmasq, curl and python3 inside sandbox-run)"
tests/e2e/run-egress-e2e.sh build

stage deb "the .deb: build it and check it"
deb=$(./scripts/package.sh)
tests/packaging/check-deb.sh "$deb"

stage vm "the kernel matrix: Debian 12's 6.1 (Landlock ABI 2) and 6.12 (ABI 6) kernels, and 6.12 with Landlock disabled, under qemu, with the integration suite in each"
tests/vm/run-kernel-matrix.sh build

stage asan-build "build (ASan + UBSan)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DOARBANK_SANITIZE=ON -DOARBANK_BENCH=OFF >/dev/null
ninja -C build-asan
stage asan-tests "tests under ASan + UBSan"
# Every test, but the integration suite under the node's ABI caps (and the report's agreement
# with the launcher at every cap) only in the Release run above: under the sanitizers the same
# agent code runs uncapped, and the whole run stays well under 15 minutes.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" \
  -E 'LandlockCap/.*/cap[0-6]|LandlockCap/ReportAgreesWithTheLauncher'


if [[ -x scripts/run-fuzz.sh ]]; then
  stage fuzz "fuzzing the policy parser"
  ./scripts/run-fuzz.sh "${OARBANK_FUZZ_SECONDS:-20}"
fi
echo "=== all tests passed"
