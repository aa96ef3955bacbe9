#!/usr/bin/env bash
# The main job on built-in defaults: installs what is needed, builds, and runs the sample
# module (examples/hello-module) under `oarbank-agent sandbox-run` (cgroup leaf or process group,
# the launch verified, everything torn down) with no node configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh oarbank-agent
root=$(mktemp -d /tmp/oarbank-demo.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bundle"
cp examples/hello-module/run.sh "$root/bundle/"
chmod 755 "$root" "$root/bundle" "$root/bundle/run.sh"
# work and tmp do not exist yet: sandbox-run makes them for the module user (nobody, as root),
# below the default writable_roots (/tmp).
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
echo "--- the module's run (oarbank-agent sandbox-run):"
OARBANK_AGENT_CONFIG= OARBANK_STATE_DIR="$root/state" ./build/oarbank-agent sandbox-run \
  --id demo --result "$root/result.json" "$root/policy.json" -- "$root/bundle/run.sh"
echo "--- how it ended (--result):"
cat "$root/result.json"
echo "--- the plan it ran under (oarbank-agent sandbox-exec --explain), abridged:"
./build/oarbank-agent sandbox-exec --explain "$root/policy.json" -- "$root/bundle/run.sh" |
  python3 -c 'import json,sys; p=json.load(sys.stdin); print(json.dumps({k: p[k] for k in ("kernel","identity","relies_on")}, indent=2)); print(len(p["landlock"]["path_rules"]), "Landlock rules,", len(p["seccomp"]["rules"]), "seccomp rules")'
