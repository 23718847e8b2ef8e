"""A minimal stdlib RPC server with tsuku's framing: the baseline for rpc_roundtrip.

``python bench/_echo.py SOCKET_PATH`` listens on a Unix socket and answers every frame
(4-byte big-endian length + JSON ``{id, method, params}``) with ``{"id": id, "result":
{"pong": true, "pid": PID}}``, exactly the shape of tsukud's ``ping`` answer. One process,
one thread, a ``selectors`` loop: the same process model as the daemon (one trio thread),
with nothing but framing, JSON decode and encode. Pipelined frames are answered in order.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import struct
import sys

HEADER = struct.Struct(">I")


def serve(path: str) -> None:
    pid = os.getpid()
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        lsock.bind(path)
    finally:
        os.umask(old)
    lsock.listen(256)
    lsock.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(lsock, selectors.EVENT_READ, None)
    bufs: dict[socket.socket, bytearray] = {}
    loads, dumps, pack, unpack_from = json.loads, json.dumps, HEADER.pack, HEADER.unpack_from
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        for key, _ in sel.select():
            sock = key.fileobj
            if sock is lsock:
                conn, _ = lsock.accept()
                conn.setblocking(True)  # replies are small: a blocking sendall is fine
                bufs[conn] = bytearray()
                sel.register(conn, selectors.EVENT_READ, None)
                continue
            assert isinstance(sock, socket.socket)
            try:
                chunk = sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                sel.unregister(sock)
                bufs.pop(sock, None)
                sock.close()
                continue
            buf = bufs[sock]
            buf += chunk
            out = []
            pos = 0
            while len(buf) - pos >= 4:
                (n,) = unpack_from(buf, pos)
                if len(buf) - pos - 4 < n:
                    break
                req = loads(bytes(buf[pos + 4 : pos + 4 + n]))
                pos += 4 + n
                body = dumps({"id": req.get("id"), "result": {"pong": True, "pid": pid}}).encode()
                out.append(pack(len(body)) + body)
            del buf[:pos]
            if out:
                try:
                    sock.sendall(b"".join(out))
                except OSError:
                    sel.unregister(sock)
                    bufs.pop(sock, None)
                    sock.close()


if __name__ == "__main__":
    serve(sys.argv[1])
