#!/usr/bin/python3
"""Request-smuggling corpus of the egress whole-system test (issue 13), and its two halves.

  smuggling.py run               inside sandbox-run: sends every case to $http_proxy, each on its
                                 own connection, and prints one JSON line per case with the
                                 statuses the proxy answered, in order
  smuggling.py check OUT REQS    outside: OUT is what `run` printed, REQS the request
                                 recorder's STATE/requests.jsonl (servers.py, allowed.test:8080);
                                 prints "ok NAME" or "FAIL NAME: why" per case, exit 1 on a FAIL

Each case asserts what the client is answered and exactly what the upstream receives: the bytes
of one canonical request, or nothing at all. A recorder connection that carries anything beyond
one expected request, or a request of no case, fails the run: that is a smuggled request.
"""
import base64
import json
import os
import re
import socket
import sys
import time
import urllib.parse

A = "allowed.test:8080"  # the request recorder, on the module's allowlist
T = "http://" + A
CL = "Connection: close\r\n"


def fwd(method, path, fields="", body=""):
    """The request the upstream must receive: canonical head, Host from the target, body."""
    return (f"{method} {path} HTTP/1.1\r\nHost: {A}\r\n{fields}Connection: close\r\n\r\n{body}")


def post(path, fields, body, version="1.1"):
    return f"POST {T}{path} HTTP/{version}\r\n{fields}\r\n{body}"


# (name, parts sent with a pause between them, statuses answered, {path: upstream bytes})
# An empty dict: no request of this case may reach the upstream.
CASES = [
    # CL.TE and TE.CL: both framings at once.
    ("cl-te", [post("/cl-te", "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\nG")],
     [400], {}),
    ("te-cl", [post("/te-cl", "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", "0\r\n\r\n")],
     [400], {}),
    ("cl-te-underscore", [post("/cl-te-us", "Content-Length: 5\r\nTransfer_Encoding: chunked\r\n",
                               "0\r\n\r\n")], [400], {}),
    ("te-cl-underscore", [post("/te-cl-us", "Transfer-Encoding: chunked\r\nContent_Length: 3\r\n",
                               "0\r\n\r\n")], [400], {}),
    # TE.TE: obfuscated Transfer-Encoding.
    ("te-twice", [post("/te-twice", "Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n",
                       "0\r\n\r\n")], [400], {}),
    ("te-space-before-colon", [post("/te-sp", "Transfer-Encoding : chunked\r\n", "0\r\n\r\n")],
     [400], {}),
    ("te-obs-fold", [post("/te-fold", "Transfer-Encoding:\r\n chunked\r\n", "0\r\n\r\n")], [400], {}),
    ("te-xchunked", [post("/te-x", "Transfer-Encoding: xchunked\r\n", "0\r\n\r\n")], [501], {}),
    ("te-list", [post("/te-list", "Transfer-Encoding: chunked, chunked\r\n", "0\r\n\r\n")], [501], {}),
    ("te-identity", [post("/te-id", "Transfer-Encoding: identity\r\n", "0\r\n\r\n")], [501], {}),
    ("te-vertical-tab", [post("/te-vt", "Transfer-Encoding: \x0bchunked\r\n", "0\r\n\r\n")], [400], {}),
    ("te-http10", [post("/te-10", "Transfer-Encoding: chunked\r\n", "0\r\n\r\n", "1.0")], [400], {}),
    ("te-tab-ows-normalised", [post("/te-tab", "Transfer-Encoding:\tCHUNKED \r\n" + CL,
                                    "0\r\n\r\n")],
     [200], {"/te-tab": fwd("POST", "/te-tab", "Transfer-Encoding: chunked\r\n", "0\r\n\r\n")}),
    # Content-Length spellings.
    ("cl-leading-zeros-normalised", [post("/cl-zeros", "Content-Length: 005\r\n" + CL, "hello")],
     [200], {"/cl-zeros": fwd("POST", "/cl-zeros", "Content-Length: 5\r\n", "hello")}),
    ("cl-plus", [post("/cl-plus", "Content-Length: +5\r\n", "hello")], [400], {}),
    ("cl-twice-equal", [post("/cl-2", "Content-Length: 5\r\nContent-Length: 5\r\n", "hello")],
     [400], {}),
    ("cl-list", [post("/cl-list", "Content-Length: 5, 5\r\n", "hello")], [400], {}),
    ("cl-hex", [post("/cl-hex", "Content-Length: 0x5\r\n", "hello")], [400], {}),
    ("cl-body-then-request",
     [post("/cl-body", "Content-Length: 5\r\n" + CL,
           "helloGET /SMUG HTTP/1.1\r\nHost: denied.test\r\n\r\n")],
     [200], {"/cl-body": fwd("POST", "/cl-body", "Content-Length: 5\r\n", "hello")}),
    ("connection-names-content-length",
     [post("/conn-cl", "Content-Length: 5\r\nConnection: Content-Length\r\n", "hello")], [400], {}),
    # Chunk-size lines: nothing but the hex digits and ';' extensions.
    ("chunk-size-inner-space", [post("/ch-1-0", "Transfer-Encoding: chunked\r\n",
                                     "1 0\r\n0123456789abcdef\r\n0\r\n\r\n")], [400], {}),
    ("chunk-size-junk", [post("/ch-junk", "Transfer-Encoding: chunked\r\n",
                              "2 junk\r\nab\r\n0\r\n\r\n")], [400], {}),
    ("chunk-last-junk", [post("/ch-0-junk", "Transfer-Encoding: chunked\r\n", "0 junk\r\n\r\n")],
     [400], {}),
    ("chunk-size-0x", [post("/ch-0x", "Transfer-Encoding: chunked\r\n", "0x5\r\nhello\r\n0\r\n\r\n")],
     [400], {}),
    ("chunk-bare-lf", [post("/ch-lf", "Transfer-Encoding: chunked\r\n", "5\nhello\n0\n\n")], [400], {}),
    ("chunk-size-overflow", [post("/ch-big", "Transfer-Encoding: chunked\r\n",
                                  "10000000000000005\r\nhello\r\n0\r\n\r\n")], [400], {}),
    ("chunk-data-too-long", [post("/ch-long", "Transfer-Encoding: chunked\r\n",
                                  "3\r\nhello\r\n0\r\n\r\n")], [400], {}),
    ("chunk-extension-relayed", [post("/ch-ext", "Transfer-Encoding: chunked\r\n" + CL,
                                      "5;name=val\r\nhello\r\n0\r\n\r\n")],
     [200], {"/ch-ext": fwd("POST", "/ch-ext", "Transfer-Encoding: chunked\r\n",
                            "5;name=val\r\nhello\r\n0\r\n\r\n")}),
    ("chunk-extension-space", [post("/ch-ext-sp", "Transfer-Encoding: chunked\r\n",
                                    "5 ;a=b\r\nhello\r\n0\r\n\r\n")], [400], {}),
    # Trailers: field lines by the head's grammar, or the request is refused.
    ("trailer-request-line", [post("/tr-smug", "Transfer-Encoding: chunked\r\n",
                                   "0\r\nGET /SMUG HTTP/1.1\r\nHost: denied.test\r\n\r\n")], [400], {}),
    ("trailer-space-before-colon", [post("/tr-sp", "Transfer-Encoding: chunked\r\n",
                                         "0\r\nX-A : 1\r\n\r\n")], [400], {}),
    ("trailer-no-colon", [post("/tr-nocolon", "Transfer-Encoding: chunked\r\n", "0\r\nX-A\r\n\r\n")],
     [400], {}),
    ("trailer-obs-fold", [post("/tr-fold", "Transfer-Encoding: chunked\r\n",
                               "0\r\nX-A: 1\r\n folded\r\n\r\n")], [400], {}),
    ("trailer-content-length", [post("/tr-cl", "Transfer-Encoding: chunked\r\n",
                                     "0\r\nContent-Length: 5\r\n\r\n")], [400], {}),
    ("trailer-canonical", [post("/tr-ok", "Transfer-Encoding: chunked\r\n" + CL,
                                "1\r\na\r\n0\r\nX-Sum:   1 \r\n\r\n")],
     [200], {"/tr-ok": fwd("POST", "/tr-ok", "Transfer-Encoding: chunked\r\n",
                           "1\r\na\r\n0\r\nX-Sum: 1\r\n\r\n")}),
    # The same trailer smuggling, arriving after the head was forwarded: the connection is reset
    # and the upstream has the head and the first chunk, never the request line.
    ("trailer-request-line-late",
     [post("/tr-late", "Transfer-Encoding: chunked\r\n", "1\r\na\r\n"),
      "0\r\nGET /SMUG HTTP/1.1\r\n", "Host: denied.test\r\n\r\n"],
     [], {"/tr-late": fwd("POST", "/tr-late", "Transfer-Encoding: chunked\r\n", "1\r\na\r\n")}),
    # Header-name and line tricks.
    ("bare-lf-head", [f"GET {T}/lf HTTP/1.1\nHost: {A}\n\n"], [400], {}),
    ("bare-cr-head", [f"GET {T}/cr HTTP/1.1\rHost: {A}\r\n\r\n"], [400], {}),
    ("nul-in-value", [f"GET {T}/nul HTTP/1.1\r\nX-A: a\x00b\r\n\r\n"], [400], {}),
    ("host-twice", [f"GET {T}/host2 HTTP/1.1\r\nHost: {A}\r\nHost: denied.test\r\n\r\n"], [400], {}),
    ("host-replaced-by-target", [f"GET {T}/host HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n{CL}\r\n"],
     [200], {"/host": fwd("GET", "/host")}),
    ("space-in-target", [f"GET {T}/a b HTTP/1.1\r\n\r\n"], [400], {}),
    # Keep-alive: every request decided on its own, in order, never forwarded undecided.
    ("pipelined-denied", [f"GET {T}/pipe-1 HTTP/1.1\r\n\r\n"
                          "GET http://denied.test/SMUG HTTP/1.1\r\nHost: denied.test\r\n\r\n"],
     [200, 403], {"/pipe-1": fwd("GET", "/pipe-1")}),
    ("pipelined-two", [f"GET {T}/pipe-a HTTP/1.1\r\n\r\nGET {T}/pipe-b HTTP/1.1\r\n{CL}\r\n"],
     [200, 200], {"/pipe-a": fwd("GET", "/pipe-a"), "/pipe-b": fwd("GET", "/pipe-b")}),
    ("pipelined-origin-form", [f"GET {T}/pipe-o HTTP/1.1\r\n\r\n"
                               f"GET /SMUG HTTP/1.1\r\nHost: {A}\r\n\r\n"],
     [200, 400], {"/pipe-o": fwd("GET", "/pipe-o")}),
    ("pipelined-after-body", [post("/pipe-body", "Content-Length: 2\r\n", "ok") +
                              f"GET {T}/pipe-next HTTP/1.1\r\n{CL}\r\n"],
     [200, 200], {"/pipe-body": fwd("POST", "/pipe-body", "Content-Length: 2\r\n", "ok"),
                  "/pipe-next": fwd("GET", "/pipe-next")}),
]


def run():
    proxy = urllib.parse.urlsplit(os.environ["http_proxy"])
    for name, parts, _, _ in CASES:
        statuses, note = [], ""
        try:
            sock = socket.create_connection((proxy.hostname, proxy.port), timeout=5)
            for i, part in enumerate(parts):
                if i:
                    time.sleep(0.15)
                sock.sendall(part.encode("latin-1"))
            data = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
            sock.close()
        except ConnectionResetError:
            note = "reset"
        except OSError as e:
            note = repr(e)
        else:
            statuses = [int(s) for s in re.findall(rb"HTTP/1\.[01] (\d{3}) ", data)]
        print(json.dumps({"case": name, "statuses": statuses, "note": note}), flush=True)
    return 0


def check(out_path, requests_path):
    results = {}
    with open(out_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("{"):
                r = json.loads(line)
                results[r["case"]] = r
    recorded = []  # (request line, raw bytes) per upstream connection
    if os.path.exists(requests_path):
        with open(requests_path, encoding="ascii") as f:
            recorded = [(r["first"], base64.b64decode(r["raw"]).decode("latin-1"))
                        for r in map(json.loads, f)]
    failed = 0
    claimed = set()
    for name, _, statuses, upstream in CASES:
        why = ""
        got = results.get(name)
        if got is None:
            why += "no result from the client; "
        elif got["statuses"] != statuses:
            why += f"answered {got['statuses']} ({got['note'] or 'closed'}), expected {statuses}; "
        for path, want in upstream.items():
            seen = [i for i, (first, _) in enumerate(recorded) if first.split(" ")[1:2] == [path]]
            if len(seen) != 1:
                why += f"{len(seen)} upstream connections for {path}, expected 1; "
                continue
            claimed.add(seen[0])
            raw = recorded[seen[0]][1]
            if raw != want:
                why += f"the upstream got {raw!r}, expected {want!r}; "
        # A request of this case that should not have arrived at all.
        for parts_path in re.findall(r"^[A-Z]+ http://[^/ ]+(/[^ ]*) ", "".join(_parts(name)), re.M):
            if parts_path not in upstream and any(
                    first.split(" ")[1:2] == [parts_path] for first, _ in recorded):
                why += f"{parts_path} reached the upstream; "
        if why:
            failed += 1
            print(f"FAIL smuggling-{name}: {why}")
        else:
            print(f"ok smuggling-{name}")
    why = ""
    for i, (first, raw) in enumerate(recorded):
        if "SMUG" in raw:
            why += f"an upstream connection carried SMUG: {raw!r}; "
        elif first and i not in claimed:
            why += f"an upstream connection no case expects: {raw[:200]!r}; "
    if why:
        failed += 1
        print(f"FAIL smuggling-upstream-only-expected: {why}")
    else:
        print("ok smuggling-upstream-only-expected")
    return 1 if failed else 0


def _parts(name):
    return next(c[1] for c in CASES if c[0] == name)


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        sys.exit(run())
    if sys.argv[1:2] == ["check"] and len(sys.argv) == 4:
        sys.exit(check(sys.argv[2], sys.argv[3]))
    print(__doc__)
    sys.exit(64)
