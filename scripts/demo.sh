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
# The plan first: sandbox-exec's --explain judges existing directories as module_user's, and
# after the run work and tmp belong to the module id's own user (as root: docs/sandbox-run.md,
# "Its own user"). The lease goes to a registry of the demo's own, removed with it.
export OARBANK_USER_REGISTRY="$root/registry"
echo "--- the plan it will run under (oarbank-agent sandbox-exec --explain), abridged:"
mkdir -m 0755 "$root/plan-work" "$root/plan-tmp" # the same plan, on directories that exist
sed -e "s#$root/work#$root/plan-work#" -e "s#$root/tmp#$root/plan-tmp#" "$root/policy.json" >"$root/plan.json"
./build/oarbank-agent sandbox-exec --explain "$root/plan.json" -- "$root/bundle/run.sh" |
  python3 -c 'import json,sys; p=json.load(sys.stdin); print(json.dumps({k: p[k] for k in ("kernel","identity","relies_on")}, indent=2)); print(len(p["landlock"]["path_rules"]), "Landlock rules,", len(p["seccomp"]["rules"]), "seccomp rules")'
echo "--- the module's run (oarbank-agent sandbox-run):"
OARBANK_AGENT_CONFIG= OARBANK_STATE_DIR="$root/state" ./build/oarbank-agent sandbox-run \
  --id demo --result "$root/result.json" "$root/policy.json" -- "$root/bundle/run.sh"
echo "--- how it ended (--result):"
cat "$root/result.json"
