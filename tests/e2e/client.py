#!/usr/bin/python3
"""The module side of the egress whole-system test: runs inside sandbox-run.

  client.py get URL CAFILE        urllib (honours https_proxy/http_proxy); prints
                                  "STATUS <code>" then the body; exit 0 on 200, 1 when
                                  refused with a status, 2 on any other error
  client.py tunnel HOST:PORT KIB  CONNECT through $https_proxy to the echo server: sends KIB
                                  KiB while reading, shuts its write side, reads to EOF and
                                  checks the echo and the final "ECHO-END n" marker
  client.py upfirst HOST:PORT KIB CONNECT to the upstream-first server: reads its 64 KiB to
                                  EOF (the host half-closed first), then sends KIB KiB and
                                  shuts its write side; prints the sha256 it sent
  client.py bypass IP PORT        ignores the proxy variables: a plain TCP connect to IP:PORT,
                                  a UDP socket, and the interfaces it can see
"""
import errno
import hashlib
import os
import re
import socket
import ssl
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request


def get(url, cafile):
    context = ssl.create_default_context(cafile=cafile)
    try:
        with urllib.request.urlopen(url, context=context, timeout=15) as response:
            print(f"STATUS {response.status}")
            sys.stdout.write(response.read().decode("utf-8", "replace"))
            return 0
    except urllib.error.HTTPError as e:  # a refused http:// request: the proxy's answer
        print(f"STATUS {e.code}")
        sys.stdout.write(e.read().decode("utf-8", "replace"))
        return 1
    except urllib.error.URLError as e:  # a refused CONNECT: "Tunnel connection failed: 403 ..."
        match = re.search(r"Tunnel connection failed: (\d{3})", str(e.reason))
        if match:
            print(f"STATUS {match.group(1)}")
            print(str(e.reason))
            return 1
        print(f"ERROR {e.reason!r}")
        return 2
    except OSError as e:
        print(f"ERROR {e!r}")
        return 2


def connect_tunnel(target):
    proxy = urllib.parse.urlsplit(os.environ["https_proxy"])
    sock = socket.create_connection((proxy.hostname, proxy.port), timeout=20)
    sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)  # byte by byte: nothing after the head is consumed here
        if not chunk:
            raise OSError("proxy closed before the end of its answer: " + repr(head))
        head += chunk
    status = head.split(b"\r\n", 1)[0].decode("ascii", "replace")
    if not re.match(r"HTTP/1\.[01] 200 ", status):
        raise OSError("proxy refused: " + status)
    return sock


def read_to_eof(sock):
    parts = []
    while True:
        data = sock.recv(65536)
        if not data:
            return b"".join(parts)
        parts.append(data)


def pattern(n, step):
    return bytes((i * step) % 256 for i in range(n))


def tunnel(target, kib):
    sock = connect_tunnel(target)
    payload = pattern(kib * 1024, 7)
    errors = []

    def writer():
        try:
            view = memoryview(payload)
            for offset in range(0, len(payload), 16384):
                sock.sendall(view[offset:offset + 16384])
            sock.shutdown(socket.SHUT_WR)
        except OSError as e:
            errors.append(e)

    thread = threading.Thread(target=writer)
    thread.start()
    received = read_to_eof(sock)
    thread.join()
    sock.close()
    if errors:
        print(f"TUNNEL write failed: {errors[0]!r}")
        return 2
    expected = payload + f"\nECHO-END {len(payload)}\n".encode()
    if received != expected:
        tail = received[-40:]
        print(f"TUNNEL mismatch: sent {len(payload)}, got {len(received)} bytes, tail {tail!r}")
        return 1
    print(f"TUNNEL ok sent={len(payload)} received={len(received)}")
    return 0


def upfirst(target, kib):
    sock = connect_tunnel(target)
    greeting = read_to_eof(sock)  # the host shut its write side first
    if greeting != bytes(i % 251 for i in range(65536)):
        print(f"UPFIRST bad greeting: {len(greeting)} bytes")
        return 1
    payload = pattern(kib * 1024, 13)
    sock.sendall(payload)  # the tunnel still carries this direction
    sock.shutdown(socket.SHUT_WR)
    rest = read_to_eof(sock)
    sock.close()
    if rest:
        print(f"UPFIRST unexpected bytes after the host's EOF: {len(rest)}")
        return 1
    print(f"UPFIRST ok received={len(greeting)} sent={len(payload)} "
          f"sha256={hashlib.sha256(payload).hexdigest()}")
    return 0


def bypass(ip, port):
    # /proc/net/dev lists the reader's namespace (if_nameindex needs netlink, which the
    # filter refuses)
    with open("/proc/net/dev", encoding="ascii") as f:
        names = [line.split(":")[0].strip() for line in f.readlines()[2:]]
    print("INTERFACES " + ",".join(names))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(3)
    try:
        sock.connect((ip, port))
        print(f"CONNECT {ip}:{port} succeeded")
        result = 1
    except OSError as e:
        name = errno.errorcode.get(e.errno, "timeout" if e.errno is None else str(e.errno))
        print(f"CONNECT {ip}:{port} failed {name}")
        result = 0
    finally:
        sock.close()
    try:
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.close()
        print("UDP socket allowed")
        result = 1
    except OSError as e:
        print(f"UDP socket refused {errno.errorcode.get(e.errno, e.errno)}")
    return result


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode in ("tunnel", "upfirst"):
        try:
            return (tunnel if mode == "tunnel" else upfirst)(args[0], int(args[1]))
        except OSError as e:
            print(f"{mode.upper()} ERROR {e!r}")
            return 2
    if mode == "get":
        return get(args[0], args[1])
    if mode == "bypass":
        return bypass(args[0], int(args[1]))
    print("usage: client.py get|tunnel|upfirst|bypass ...")
    return 64


if __name__ == "__main__":
    sys.exit(main())
