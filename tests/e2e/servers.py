#!/usr/bin/python3
"""Test hosts of the egress whole-system test, run inside the hosts network namespace.

One process, one thread per listener:
  HOST:80    plain HTTP   (every HOST given)     body "hello from HOST over http"
  HOST:443   HTTPS        (every HOST given)     body "hello from HOST over https"
  FIRST:7    echo         echoes until the client's EOF, then sends "\\nECHO-END <n>\\n"
                          (n = bytes received) and closes: half-close towards the host
  FIRST:9    upstream-first half-close: sends 65536 pattern bytes, shuts its write side,
                          reads until EOF and appends "<n> <sha256>" to STATE/upfirst.log
  FIRST:3128 recorder     appends one line per accepted connection to STATE/recorder.log
  FIRST:8080 request recorder: reads one request (Content-Length or chunked body, trailers to
                          the empty line), answers 200 "recorded <request line>", then reads
                          whatever else the connection brings until its EOF, and appends
                          {"first": <request line>, "raw": <every byte, base64>} to
                          STATE/requests.jsonl: a second request smuggled behind the first shows
  DNS_ADDR:53 (UDP+TCP)   a DNS responder for flip.test (A answers alternate between
                          FIRST and 127.0.0.1, TTL 0) and mixed.test (both at once)

Writes STATE/ready once every listener is bound. Stops on SIGTERM.
Usage: servers.py STATE CERT KEY DNS_ADDR HOST [HOST...]
"""
import base64
import hashlib
import json
import http.server
import os
import signal
import socket
import socketserver
import ssl
import struct
import sys
import threading

STATE, CERT, KEY, DNS_ADDR = sys.argv[1:5]
HOSTS = sys.argv[5:]
FIRST = HOSTS[0]
LOCK = threading.Lock()


def append(name, line):
    with LOCK, open(os.path.join(STATE, name), "a", encoding="ascii") as f:
        f.write(line + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    scheme = "http"

    def do_GET(self):  # noqa: N802 (http.server's naming)
        host = self.server.server_address[0]
        body = f"hello from {host} over {self.scheme} path {self.path}\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        append("http.log", f"{self.server.server_address[0]} {self.scheme} {fmt % args}")


class HttpsHandler(Handler):
    scheme = "https"


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class TlsServer(Server):
    def __init__(self, address, handler, context):
        super().__init__(address, handler)
        self.context = context

    def get_request(self):
        sock, addr = self.socket.accept()
        sock.settimeout(10)
        try:
            return self.context.wrap_socket(sock, server_side=True), addr
        except (ssl.SSLError, OSError):
            sock.close()
            raise


def tcp_listener(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    s.listen(64)
    return s


def serve_forever(listener, handle):
    while True:
        conn, peer = listener.accept()
        threading.Thread(target=handle, args=(conn, peer), daemon=True).start()


def echo(conn, _peer):
    with conn:
        conn.settimeout(20)
        total = 0
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                total += len(data)
                conn.sendall(data)
            conn.sendall(f"\nECHO-END {total}\n".encode())
        except OSError as e:
            append("echo.log", f"error {e}")
            return
        append("echo.log", f"ok {total}")


def upstream_first(conn, _peer):
    with conn:
        conn.settimeout(20)
        try:
            conn.sendall(bytes(i % 251 for i in range(65536)))
            conn.shutdown(socket.SHUT_WR)
            digest = hashlib.sha256()
            total = 0
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                total += len(data)
                digest.update(data)
            append("upfirst.log", f"{total} {digest.hexdigest()}")
        except OSError as e:
            append("upfirst.log", f"error {e}")


def recorder(conn, peer):
    append("recorder.log", f"connection from {peer[0]}:{peer[1]}")
    conn.close()


def read_request(conn, raw):
    """Reads one request into `raw` (a bytearray); returns its request line ("" if none)."""
    while b"\r\n\r\n" not in raw:
        data = conn.recv(65536)
        if not data:
            return ""
        raw += data
    head, _, rest = bytes(raw).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()

    def need(pred):
        nonlocal rest
        while not pred(rest):
            try:
                data = conn.recv(65536)
            except OSError:  # a reset inside the body: the request line is still recorded
                return False
            if not data:
                return False
            raw.extend(data)
            rest += data
        return True

    if fields.get("transfer-encoding", "").lower() == "chunked":
        pos = 0
        while True:
            if not need(lambda r: b"\r\n" in r[pos:]):
                break
            end = rest.index(b"\r\n", pos)
            size = int(rest[pos:end].split(b";")[0] or b"0", 16)
            pos = end + 2
            if size == 0:
                need(lambda r: b"\r\n\r\n" in b"\r\n" + r[pos:])
                break
            if not need(lambda r: len(r) >= pos + size + 2):
                break
            pos += size + 2
    elif "content-length" in fields:
        length = int(fields["content-length"])
        need(lambda r: len(r) >= length)
    return lines[0]


def request_recorder(conn, _peer):
    with conn:
        conn.settimeout(5)
        raw = bytearray()
        first = ""
        try:
            first = read_request(conn, raw)
            if first:
                body = f"recorded {first}\n".encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            while True:  # everything else the connection brings: a smuggled request shows here
                data = conn.recv(65536)
                if not data:
                    break
                raw += data
        except (OSError, ValueError):
            pass
        append("requests.jsonl", json.dumps({"first": first,
                                             "raw": base64.b64encode(bytes(raw)).decode()}))


# --- DNS (just enough of RFC 1035 for one question) ---
FLIP = {"count": 0}


def dns_answer(query):
    if len(query) < 12:
        return None
    qid, flags, qdcount = struct.unpack("!HHH", query[:6])
    if flags & 0x8000 or qdcount != 1:
        return None
    pos, labels = 12, []
    while pos < len(query) and query[pos] != 0:
        n = query[pos]
        labels.append(query[pos + 1:pos + 1 + n].decode("ascii", "replace").lower())
        pos += 1 + n
    pos += 1
    if pos + 4 > len(query):
        return None
    qtype, qclass = struct.unpack("!HH", query[pos:pos + 4])
    question = query[12:pos + 4]
    name = ".".join(labels)
    rcode, addresses = 0, []
    if name == "flip.test":
        if qtype == 1:
            with LOCK:
                FLIP["count"] += 1
                n = FLIP["count"]
            addresses = [FIRST] if n % 2 == 1 else ["127.0.0.1"]
            append("dns.log", f"flip.test A #{n} -> {addresses[0]}")
    elif name == "mixed.test":
        if qtype == 1:
            addresses = [FIRST, "127.0.0.1"]
    else:
        rcode = 3  # NXDOMAIN
    header = struct.pack("!HHHHHH", qid, 0x8400 | (flags & 0x0100) | rcode, 1,
                         len(addresses), 0, 0)
    answers = b"".join(
        b"\xc0\x0c" + struct.pack("!HHIH", 1, qclass, 0, 4) + socket.inet_aton(a)
        for a in addresses)
    return header + question + answers


def dns_udp(sock):
    while True:
        query, peer = sock.recvfrom(4096)
        reply = dns_answer(query)
        if reply:
            sock.sendto(reply, peer)


def dns_tcp(conn, _peer):
    with conn:
        conn.settimeout(5)
        try:
            head = conn.recv(2)
            (length,) = struct.unpack("!H", head)
            query = b""
            while len(query) < length:
                chunk = conn.recv(length - len(query))
                if not chunk:
                    return
                query += chunk
            reply = dns_answer(query)
            if reply:
                conn.sendall(struct.pack("!H", len(reply)) + reply)
        except (OSError, struct.error):
            pass


def main():
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(CERT, KEY)
    servers = []
    for host in HOSTS:
        servers.append(Server((host, 80), Handler))
        servers.append(TlsServer((host, 443), HttpsHandler, context))
    raw = [(tcp_listener(FIRST, 7), echo), (tcp_listener(FIRST, 9), upstream_first),
           (tcp_listener(FIRST, 3128), recorder), (tcp_listener(FIRST, 8080), request_recorder),
           (tcp_listener(DNS_ADDR, 53), dns_tcp)]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((DNS_ADDR, 53))
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    for listener, handle in raw:
        threading.Thread(target=serve_forever, args=(listener, handle), daemon=True).start()
    threading.Thread(target=dns_udp, args=(udp,), daemon=True).start()
    with open(os.path.join(STATE, "ready"), "w", encoding="ascii") as f:
        f.write(str(os.getpid()) + "\n")
    signal.pause()


if __name__ == "__main__":
    main()
