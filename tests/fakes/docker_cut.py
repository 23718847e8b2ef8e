"""A Unix-socket forwarder to the real Docker endpoint that dies mid-run.

It passes every byte both ways until a client asks Docker for ``trigger`` (by default,
to create a container); then it closes every connection and its own socket, as a
restarted or crashed ``dockerd`` would, right after the daemon's readiness checks
passed. Real Docker answers everything before that moment.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
from types import TracebackType


class CuttableDocker:
    def __init__(self, upstream: str, trigger: bytes = b"/containers/create") -> None:
        if not upstream.startswith("unix://"):
            raise ValueError(f"a unix:// Docker endpoint is needed, not {upstream!r}")
        self.upstream = upstream.removeprefix("unix://")
        self.trigger = trigger
        self.dir = tempfile.mkdtemp(prefix="dk-")
        self.path = os.path.join(self.dir, "docker.sock")
        self.cut = threading.Event()
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)

    @property
    def endpoint(self) -> str:
        return f"unix://{self.path}"

    def __enter__(self) -> CuttableDocker:
        self._listener.bind(self.path)
        self._listener.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._die()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.rmdir(self.dir)

    def _die(self) -> None:
        self.cut.set()
        with self._lock:
            for s in [self._listener, *self._socks]:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()

    def _accept(self) -> None:
        while not self.cut.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(self.upstream)
            with self._lock:
                self._socks += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, watch: bool) -> None:
        tail = b""
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                return
            if not data:
                with contextlib.suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)
                return
            if watch:
                seen, tail = tail + data, (tail + data)[-len(self.trigger) :]
                if self.trigger in seen:
                    self._die()
                    return
            try:
                dst.sendall(data)
            except OSError:
                return
