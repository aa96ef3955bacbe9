#!/usr/bin/python3
"""dnsquery.py SERVER NAME...: one A query over UDP per name, in order; prints one line per
name: the addresses, space-separated, or "rcode N", or "no answer" (within 2 s). Exit 1 when
any got no answer (readiness checks poll it)."""
import random
import socket
import struct
import sys


def query_one(server, name):
    qid = random.randrange(65536)
    query = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    query += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    query += struct.pack("!HH", 1, 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(2)
    try:
        sock.sendto(query, (server, 53))
        reply, _ = sock.recvfrom(4096)
    except OSError:
        return None
    finally:
        sock.close()
    rid, flags, _qd, ancount = struct.unpack("!HHHH", reply[:8])
    if rid != qid:
        return None
    if flags & 0xF:
        return f"rcode {flags & 0xF}"
    pos = len(query)  # the question is echoed as sent
    addresses = []
    for _ in range(ancount):
        if reply[pos] & 0xC0 == 0xC0:
            pos += 2
        else:
            while reply[pos]:
                pos += 1 + reply[pos]
            pos += 1
        rtype, _cls, _ttl, rdlen = struct.unpack("!HHIH", reply[pos:pos + 10])
        pos += 10
        if rtype == 1 and rdlen == 4:
            addresses.append(socket.inet_ntoa(reply[pos:pos + 4]))
        pos += rdlen
    return " ".join(addresses)


def main():
    status = 0
    for name in sys.argv[2:]:
        answer = query_one(sys.argv[1], name)
        if answer is None:
            answer, status = "no answer", 1
        print(answer)
    return status


if __name__ == "__main__":
    sys.exit(main())
