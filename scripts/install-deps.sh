#!/usr/bin/env bash
# Installs the Debian 12 packages the project builds, tests and benchmarks with.
# Idempotent: apt-get skips what is already there.
set -euo pipefail
packages=(
  build-essential cmake pkg-config ninja-build
  libseccomp-dev nlohmann-json3-dev libcli11-dev libfmt-dev libasio-dev libc-ares-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev
  # CMakeLists.txt: lld links the launch binary in its launch order (src/cli/launch-order.txt)
  lld
  # scripts/lint.sh: the tree's format (.clang-format) and clang-tidy (.clang-tidy)
  clang-format clang-tidy
  # fuzz/proxy_llhttp_fuzz.cpp: llhttp's C sources, the differential fuzzer's reference parser
  node-llhttp
  hyperfine python3
  # tests/integration/module_world_test.cpp: CPython's own regression tests, run inside a
  # module's world as outside (issue 12)
  libpython3.11-testsuite
  # bench/run-launch-bench.sh: bubblewrap, a side of the launch benchmark (docs/performance.md);
  # Debian 12 packages no nsjail
  bubblewrap
  # tests/packaging: file(1) tells a static binary
  file
  # the man page, generated from --help at build time (cmake/packaging.cmake); man-db checks it
  help2man man-db
  # tests/e2e: test hosts in network namespaces, a real DNS server, real clients
  dnsmasq-base iproute2 openssl curl
  # tests/e2e: Node's own proxy idioms as real clients
  nodejs
  # tests/vm: real Debian kernels under qemu (software emulation); qboot.rom is in qemu-system-data
  qemu-system-x86 qemu-system-data busybox-static
  # tests/vm, the systemd guest: its Debian 12 root file system (fetch-rootfs.sh, cached)
  debootstrap
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
