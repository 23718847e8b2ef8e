"""The test side of the forked daemons (tests/daemon_forks.py), against a stand-in for
the parent process: what each daemon's ``Popen`` reports comes from that daemon's own
messages, even when the parent's pids repeat."""

from __future__ import annotations

import array
import json
import os
import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from tests.daemon_forks import Zygote
from tests.waiting import wait_until


class StandIn:
    """Answers each fork request with the next pid given, and reports ends on demand."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.pids: list[int] = []

    def serve(self) -> None:
        while True:
            fds = array.array("i")
            try:
                msg, anc, _f, _a = self.sock.recvmsg(1 << 20, socket.CMSG_SPACE(3 * fds.itemsize))
            except OSError:
                return
            if not msg:
                return
            for _level, _kind, data in anc:
                fds.frombytes(data)
            for fd in fds:
                os.close(fd)
            self.send({"pid": self.pids.pop(0)})

    def send(self, message: dict[str, int]) -> None:
        self.sock.send(json.dumps(message).encode())


@pytest.fixture
def zygote() -> Iterator[tuple[Zygote, StandIn]]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    z = Zygote()
    z._ctl = ours
    z._settings = {}
    threading.Thread(target=z._read, args=(ours,), daemon=True).start()
    stand_in = StandIn(theirs)
    threading.Thread(target=stand_in.serve, daemon=True).start()
    try:
        yield z, stand_in
    finally:
        z.close()
        theirs.close()


def _eventually(check: Callable[[], object], what: str) -> None:
    wait_until(check, what, timeout=10)


def test_a_reused_pid_does_not_take_the_earlier_daemons_end(
    zygote: tuple[Zygote, StandIn],
) -> None:
    z, parent = zygote
    parent.pids = [4242, 4242]
    first = z.spawn(["--foreground"], {})
    assert first.poll() is None
    parent.send({"exited": 4242, "status": 3})
    _eventually(lambda: first.poll() == 3, "the first daemon's end")
    second = z.spawn(["--foreground"], {})  # the same pid, a new daemon
    assert second.pid == first.pid
    assert second.poll() is None
    assert first.poll() == 3 and first.wait(timeout=1) == 3
    parent.send({"exited": 4242, "status": 0})
    assert second.wait(timeout=10) == 0
    for proc in (first, second):
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
