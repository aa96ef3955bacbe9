#!/usr/bin/env bash
# The main job on built-in defaults: installs what is needed, builds, and runs the sample
# module (examples/hello-module) under `oarbank-agent sandbox-exec` with no node configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh oarbank-agent
root=$(mktemp -d /tmp/oarbank-demo.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bundle" "$root/work" "$root/tmp"
cp examples/hello-module/run.sh "$root/bundle/"
chmod 755 "$root" "$root/bundle" "$root/bundle/run.sh"
# As root the module runs as nobody (65534), which must own its writable directories.
if [[ $(id -u) -eq 0 ]]; then chown 65534:65534 "$root/work" "$root/tmp"; fi
cat >"$root/policy.json" <<JSON
{
  "version": 1,
  "bundle": "$root/bundle",
  "work": "$root/work",
  "temp": "$root/tmp",
  "net": "none",
  "ipc_isolation": "best-effort"
}
JSON
echo "--- the plan (oarbank-agent sandbox-exec --explain), abridged:"
./build/oarbank-agent sandbox-exec --explain "$root/policy.json" -- "$root/bundle/run.sh" |
  python3 -c 'import json,sys; p=json.load(sys.stdin); print(json.dumps({k: p[k] for k in ("kernel","identity","relies_on")}, indent=2)); print(len(p["landlock"]["path_rules"]), "Landlock rules,", len(p["seccomp"]["rules"]), "seccomp rules")'
echo "--- the module's run:"
OARBANK_AGENT_CONFIG= ./build/oarbank-agent sandbox-exec "$root/policy.json" -- "$root/bundle/run.sh"
