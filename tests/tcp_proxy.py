"""A loopback TCP proxy that a test can cut and restore: the network between a daemon and
its database, failing the way a real one does.

``cut()`` resets every connection through it (each side sees its peer vanish, as after a
switch or a firewall drops the flow) and, until ``restore()``, resets every new
connection the moment it is accepted, so a client's reconnect fails at once with a reset
instead of reaching the server. The listening port never changes, so the URL a daemon was
given stays valid across a cut.

One thread runs a selector over the listener and every pair of sockets; ``cut`` and
``restore`` are applied by that thread and return only once they have taken effect, so
a test that cuts and then acts knows no byte crosses any more.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import threading
from collections.abc import Callable

_CHUNK = 65536


def _reset(sock: socket.socket) -> None:
    """Close with an RST rather than a FIN: the peer learns at once that the flow is gone."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


class TcpProxy:
    """Forwards ``127.0.0.1:port`` to ``target``; start with ``start()`` or ``with``."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.setblocking(False)
        self.port: int = self._listener.getsockname()[1]
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._commands: list[tuple[Callable[[], None], threading.Event]] = []
        self._lock = threading.Lock()
        self._peers: dict[socket.socket, socket.socket] = {}
        self._cut = False
        self._stopping = False
        self.accepted = 0  # connections forwarded to the target
        self.refused = 0  # connections reset at accept while cut
        self._thread = threading.Thread(target=self._loop, name="tcp-proxy", daemon=True)

    # ---- control (any thread) ------------------------------------------------------

    def start(self) -> TcpProxy:
        self._selector.register(self._listener, selectors.EVENT_READ, "accept")
        self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._thread.start()
        return self

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._peers) // 2

    @property
    def is_cut(self) -> bool:
        return self._cut

    def cut(self) -> None:
        """Reset every connection through the proxy and every new one until ``restore``."""
        self._apply(self._do_cut)

    def restore(self) -> None:
        """Forward new connections again (the ones cut stay gone, as on a real network)."""
        self._apply(self._do_restore)

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        self._apply(self._do_cut)
        self._stopping = True
        self._wake_w.send(b"x")
        self._thread.join(timeout=10)
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()
        self._selector.close()

    def _apply(self, command: Callable[[], None]) -> None:
        if not self._thread.is_alive():
            raise RuntimeError("the proxy is not running")
        done = threading.Event()
        with self._lock:
            self._commands.append((command, done))
        self._wake_w.send(b"x")
        if not done.wait(timeout=10):
            raise RuntimeError("the proxy's thread did not apply the command within 10 s")

    # ---- the proxy's thread ----------------------------------------------------------

    def _do_cut(self) -> None:
        self._cut = True
        with self._lock:
            socks = list(self._peers)
            self._peers.clear()
        for sock in socks:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(sock)
            _reset(sock)

    def _do_restore(self) -> None:
        self._cut = False

    def _loop(self) -> None:
        while not self._stopping:
            for key, _ in self._selector.select(timeout=1.0):
                if key.data == "wake":
                    self._run_commands()
                elif key.data == "accept":
                    self._accept()
                else:
                    self._pump(key.fileobj)  # type: ignore[arg-type]

    def _run_commands(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while self._wake_r.recv(1024):
                pass
        with self._lock:
            commands, self._commands = self._commands, []
        for command, done in commands:
            command()
            done.set()

    def _accept(self) -> None:
        try:
            client, _ = self._listener.accept()
        except BlockingIOError:
            return
        if self._cut:
            self.refused += 1
            _reset(client)
            return
        try:
            upstream = socket.create_connection(self.target, timeout=5)
        except OSError:
            _reset(client)
            return
        for sock in (client, upstream):
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._selector.register(sock, selectors.EVENT_READ, "pump")
        with self._lock:
            self._peers[client] = upstream
            self._peers[upstream] = client
        self.accepted += 1

    def _pump(self, sock: socket.socket) -> None:
        with self._lock:
            peer = self._peers.get(sock)
        if peer is None:
            return
        try:
            data = sock.recv(_CHUNK)
            if data:
                # Blocking send for simplicity: loopback buffers are large and the
                # database's messages small; a slow reader only slows this pair.
                peer.setblocking(True)
                try:
                    peer.sendall(data)
                finally:
                    peer.setblocking(False)
                return
        except OSError:
            pass
        self._close_pair(sock, peer)

    def _close_pair(self, sock: socket.socket, peer: socket.socket) -> None:
        with self._lock:
            self._peers.pop(sock, None)
            self._peers.pop(peer, None)
        for s in (sock, peer):
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(s)
            with contextlib.suppress(OSError):
                s.close()
