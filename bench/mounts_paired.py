# Paired rounds for bench/run-mounts-bench.sh: AGENT DIR ROUNDS (DIR holds p.json, on.json, off.json).
import os, subprocess, sys, time, statistics
agent, T = sys.argv[1], sys.argv[2]
env = dict(os.environ, OARBANK_STATE_DIR=T + "/state")
cmds = {
  "bare": ["/bin/true"],
  "off": [agent, "sandbox-run", "--config", T + "/off.json", T + "/p.json", "--", "/bin/true"],
  "bwrap": ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "/bin/true"],
  "on": [agent, "sandbox-run", "--config", T + "/on.json", T + "/p.json", "--", "/bin/true"],
}
def once(c):
    t = time.perf_counter_ns(); subprocess.run(c, env=env, check=True); return (time.perf_counter_ns() - t) / 1e6
for _ in range(20):
    for c in cmds.values(): once(c)
res = {k: [] for k in cmds}
diffs = []
for i in range(int(sys.argv[3])):
    order = list(cmds) if i % 2 == 0 else list(reversed(cmds))
    r = {k: once(cmds[k]) for k in order}
    for k in r: res[k].append(r[k])
    diffs.append((r["on"] - r["off"]) / r["bare"])
for k, v in res.items(): print(f"{k:5} median {statistics.median(v):.3f} ms")
print(f"paired median of (on - off) / bare: {statistics.median(diffs):.2f}x")
