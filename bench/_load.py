"""A closed-loop load generator: many connections from one process, no threads.

``python bench/_load.py SOCKET CONNECTIONS DEPTH START_AT SECONDS METHOD``

Opens CONNECTIONS Unix-socket connections, waits until wall time START_AT, then keeps
DEPTH requests in flight on each one (DEPTH=1: each connection is a client that sends
its next request only after the answer to the previous one). Requests carry distinct
ids; an answer counts when its frame is a ``result`` (an ``error`` frame is counted
separately). Driven by one ``selectors`` (epoll) loop, so the generator spends as little
CPU as a Python client can: on a 2-core machine it competes with the server for CPU.
Prints one JSON line: ``{"calls": N, "errors": E, "seconds": S}``.
"""

from __future__ import annotations

import json
import selectors
import socket
import struct
import sys
import time

HEADER = struct.Struct(">I")


def main() -> int:
    path, nconn, depth, start_at, seconds, method = sys.argv[1:7]
    n, d, dur = int(nconn), int(depth), float(seconds)
    template = '{"id":%d,"method":"' + method + '","params":{}}'
    pack, unpack_from = HEADER.pack, HEADER.unpack_from

    def frame(i: int) -> bytes:
        body = (template % i).encode()
        return pack(len(body)) + body

    sel = selectors.DefaultSelector()
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        socks.append(s)
    bufs = {s: bytearray() for s in socks}
    next_id = 1
    calls = errors = 0
    while time.time() < float(start_at):
        time.sleep(0.001)
    t0 = time.perf_counter()
    end = t0 + dur
    for s in socks:
        s.sendall(b"".join(frame(next_id + k) for k in range(d)))
        next_id += d
        sel.register(s, selectors.EVENT_READ)
    stopping = False
    inflight = n * d
    while inflight:
        if not stopping and time.perf_counter() >= end:
            stopping = True
        for key, _ in sel.select(timeout=1.0):
            s = key.fileobj
            assert isinstance(s, socket.socket)
            chunk = s.recv(65536)
            if not chunk:
                raise SystemExit("server closed a connection")
            buf = bufs[s]
            buf += chunk
            pos = 0
            done = 0
            while len(buf) - pos >= 4:
                (ln,) = unpack_from(buf, pos)
                if len(buf) - pos - 4 < ln:
                    break
                body = bytes(buf[pos + 4 : pos + 4 + ln])
                pos += 4 + ln
                if stopping:
                    pass  # drained after the window: not counted
                elif b'"result"' in body:
                    calls += 1
                else:
                    errors += 1
                done += 1
            del buf[:pos]
            inflight -= done
            if done and not stopping:
                s.sendall(b"".join(frame(next_id + k) for k in range(done)))
                next_id += done
                inflight += done
    elapsed = dur
    for s in socks:
        s.close()
    print(json.dumps({"calls": calls, "errors": errors, "seconds": elapsed}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
