#!/usr/bin/python3
"""Checks the proxy's JSON log lines of one egress whole-system case (docs/proxy.md, "Log lines").

  checklog.py FILE SPEC...   every line must be a JSON object with the documented fields; the
                             decision lines must match the SPECs in order, one each:
                               allow|DEST|ADDR           verdict allow, that destination, ADDR
                                                         among its addresses ("*": any)
                               refuse|STATUS|DEST|ADDR   verdict refuse with that status
                             and every allowed connection must have its "closed" line.
                             Extra SPECs for closed lines (matched against all of them):
                               closed|DEST|ADDRESS|OUTCOME|BYTES_UP|BYTES_DOWN   ("*": any;
                                                         "a/b": a or b)
  checklog.py --print FILE   one line per decision: "VERDICT STATUS DEST ADDR,ADDR"
Exit 0 when it all holds; else 1 and one line saying what does not.
"""
import json
import sys

DECISION_FIELDS = {"time", "event", "module", "client", "method", "destination", "addresses",
                   "verdict", "status", "reason"}
CLOSED_FIELDS = {"time", "event", "module", "client", "method", "destination", "address",
                 "bytes_up", "bytes_down", "duration_ms", "outcome", "status",
                 "upstream_status", "reason"}


def load(path):
    events = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"line {number} is not JSON ({e}): {line.strip()[:200]}")
            if not isinstance(event, dict):
                raise SystemExit(f"line {number} is not an object")
            kind = event.get("event")
            wanted = DECISION_FIELDS if kind == "decision" else CLOSED_FIELDS
            if kind not in ("decision", "closed"):
                raise SystemExit(f"line {number}: unknown event {kind!r}")
            missing = wanted - event.keys()
            if missing:
                raise SystemExit(f"line {number}: {kind} line lacks {sorted(missing)}")
            events.append(event)
    return events


def matches(want, got):
    return want == "*" or str(got) in want.split("/")


def fail(message):
    print(message)
    sys.exit(1)


def main():
    if sys.argv[1] == "--print":
        for e in load(sys.argv[2]):
            if e["event"] == "decision":
                print(e["verdict"], e["status"], e["destination"],
                      ",".join(e["addresses"] or []))
        return
    try:
        events = load(sys.argv[1])
    except SystemExit as e:
        fail(str(e))
    decisions = [e for e in events if e["event"] == "decision"]
    closed = [e for e in events if e["event"] == "closed"]
    specs = [s.split("|") for s in sys.argv[2:]]
    decision_specs = [s for s in specs if s[0] != "closed"]
    closed_specs = [s for s in specs if s[0] == "closed"]
    summary = "; ".join(f"{d['verdict']} {d['status']} {d['destination']} {d['addresses']}"
                        for d in decisions)
    if len(decisions) != len(decision_specs):
        fail(f"{len(decisions)} decision lines, expected {len(decision_specs)}: {summary}")
    for spec, d in zip(decision_specs, decisions):
        if spec[0] == "allow":
            _, dest, addr = spec
            status = None
        else:
            _, status, dest, addr = spec
        ok = (d["verdict"] == spec[0] and d["destination"] == dest
              and (addr == "*" or addr in (d["addresses"] or []))
              and (status is None and d["status"] is None or matches(status, d["status"])))
        if not ok:
            fail(f"decision {d['verdict']} {d['status']} {d['destination']} {d['addresses']} "
                 f"({d['reason']}) does not match {'|'.join(spec)}")
    for d in decisions:
        if d["verdict"] == "allow" and not any(c["client"] == d["client"] for c in closed):
            fail(f"no closed line for the allowed connection from {d['client']}")
    for spec in closed_specs:
        _, dest, address, outcome, up, down = spec
        if not any(matches(dest, c["destination"]) and matches(address, c["address"])
                   and matches(outcome, c["outcome"]) and matches(up, c["bytes_up"])
                   and matches(down, c["bytes_down"]) for c in closed):
            got = "; ".join(f"{c['destination']} {c['address']} {c['outcome']} "
                            f"up={c['bytes_up']} down={c['bytes_down']}" for c in closed)
            fail(f"no closed line matches {'|'.join(spec)}: {got or 'none'}")


if __name__ == "__main__":
    main()
