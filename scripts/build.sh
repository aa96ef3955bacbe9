#!/usr/bin/env bash
# Configures and builds into ./build (Release, static oarbank-agent). Arguments name ninja
# targets (default: everything, tests and benchmarks included).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build "$@"
