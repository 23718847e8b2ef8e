"""Hostile frames pipelined over a real daemon's Unix socket, every answer accounted for.

A handful of connections, each sending windows of frames at once (pipelined, as
schema/rpc.md allows) and reading until every frame of the window has its one final
answer. Answers are told apart by id: most requests carry a tag (tests/hostile_random.py)
no other frame has; a final under any other id must belong to a frame of the window that
carries that id; a final with no id is a ``bad_request`` for a frame the daemon could
not read an id from. So each frame gets exactly one final frame, never ``internal``, with
the code the protocol fixes for it when it fixes one.

A connection ends the way clients end them: closed quietly, walked away from with a
window in flight (its requests cancelled), or broken on purpose: a length past the cap
(``frame_too_large``, then a hang-up), a body cut short before end of file (no answer, a
hang-up) or bytes that are not frames at all. Then a new connection takes its place.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from tests import hostile_rpc as h
from tests.hostile_random import Frames, Sent

WINDOW = 32  # frames in flight on one connection at a time
ANSWER_S = 60.0  # a window's answers (or a hang-up) must come within this
ENDINGS = ("quiet", "walk_away", "oversize_prefix", "truncated", "raw_bytes")
_ERROR_FIELDS = {"code", "message", "hint", "exit_code", "retryable"}


class Unanswered(AssertionError):
    pass


@dataclass
class Tally:
    """What a run sent and saw: its bar is ``frames``."""

    frames: int = 0  # each answered and checked, or a hang-up checked
    walked_away: int = 0  # sent on connections closed before their answers
    connections: int = 0
    codes: Counter[str] = field(default_factory=Counter)
    endings: Counter[str] = field(default_factory=Counter)


def _key(rid: object) -> tuple[str, object]:
    return (type(rid).__name__, rid)


def _error_ok(f: dict[str, Any], context: object) -> str:
    err = f["error"]
    assert set(err) >= _ERROR_FIELDS, (err, context)
    assert err["code"] != "internal", (err, context)
    return str(err["code"])


def account(sent: list[Sent], finals: list[dict[str, Any]], seed: int, tally: Tally) -> None:
    """Hold a drained window to its promise: each frame exactly one final, under its
    own id or (a ``bad_request``) under none, with the code fixed for it."""
    open_by_id: dict[tuple[str, object], list[Sent]] = {}
    for s in sent:
        open_by_id.setdefault(_key(s.rid), []).append(s)
    anonymous: list[dict[str, Any]] = []
    for f in finals:
        code = _error_ok(f, seed) if "error" in f else "ok"
        tally.codes[code] += 1
        if f["id"] is None:
            assert code == "bad_request", (f, f"seed {seed}")
            anonymous.append(f)
            continue
        candidates = open_by_id.get(_key(f["id"]), [])
        assert candidates, ("an answer to no frame in flight, or a second one", f, seed)
        # Frames sharing a hostile id are told apart by the code fixed for them.
        fits = [s for s in candidates if s.must_be == code] or [
            s for s in candidates if s.must_be is None
        ]
        assert fits, ("wrong code", f, [s.body[:300] for s in candidates], f"seed {seed}")
        candidates.remove(fits[0])
    left = [s for group in open_by_id.values() for s in group]
    assert len(left) == len(anonymous), (
        "frames without exactly one answer",
        [s.body[:300] for s in left],
        anonymous,
        f"seed {seed}",
    )
    for s in left:  # answered without an id: the daemon found none it could read
        assert s.must_be in (None, "bad_request"), (s.body[:300], s.must_be, f"seed {seed}")


class Conn:
    """One client connection: frames out, frames in, the daemon's questions refused."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.lock = trio.Lock()
        self.buf = b""
        self.eof_sent = False

    async def send(self, data: bytes) -> None:
        async with self.lock:
            await self.stream.send_all(data)

    async def receive(self) -> list[dict[str, Any]] | None:
        """The next complete frames (questions answered), or None at the hang-up."""
        while True:
            got, self.buf = h.split_frames(self.buf)
            if got:
                replies = [h.refuse_confirmation(f.get("progress")) for f in got]
                if any(replies) and not self.eof_sent:
                    await self.send(b"".join(r for r in replies if r is not None))
                return got
            chunk = await self.stream.receive_some(1 << 16)
            if not chunk:
                return None
            self.buf += chunk

    async def window(self, sent: list[Sent], seed: int, tally: Tally) -> None:
        finals: list[dict[str, Any]] = []

        async def send_all() -> None:
            await self.send(b"".join(h.frame(s.body) for s in sent))

        with trio.move_on_after(ANSWER_S) as waited:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(send_all)
                while len(finals) < len(sent):
                    got = await self.receive()
                    if got is None:
                        break
                    finals += [f for f in got if h.is_final(f)]
        if waited.cancelled_caught or len(finals) < len(sent):
            raise Unanswered(
                f"{len(finals)} of {len(sent)} answered (seed {seed}): "
                f"{[s.body[:200] for s in sent]!r}"
            )
        account(sent, finals, seed, tally)

    async def until_hang_up(self) -> list[dict[str, Any]]:
        frames: list[dict[str, Any]] = []
        with trio.fail_after(ANSWER_S):
            while (got := await self.receive()) is not None:
                frames += got
        return frames


async def _end(conn: Conn, how: str, frames: Frames, tally: Tally) -> None:
    seed = frames.seed
    tally.endings[how] += 1
    if how == "quiet":
        return
    if how == "walk_away":  # requests in flight, then gone: the daemon cancels them
        await conn.send(b"".join(h.frame(frames.next().body) for _ in range(WINDOW)))
        tally.walked_away += WINDOW  # no answer to check: the daemon's log is checked
        return
    tally.frames += 1
    await conn.send(getattr(frames, how)())
    if how == "oversize_prefix":
        got = await conn.until_hang_up()
        assert [(f["id"], f["error"]["code"]) for f in got] == [(None, "frame_too_large")], (
            got,
            seed,
        )
        return
    await conn.stream.send_eof()
    conn.eof_sent = True
    got = await conn.until_hang_up()
    if how == "truncated":
        assert got == [], (got, seed)  # the body never arrived: nothing to answer
    for f in got:
        if "error" in f:
            _error_ok(f, seed)


async def _client(
    path: Path, frames: Frames, quota: int, tally: Tally, endings: tuple[str, ...], windows: int
) -> None:
    r = frames.r
    while quota > 0:
        stream = await trio.open_unix_socket(str(path))
        tally.connections += 1
        conn = Conn(stream)
        async with stream:
            for _ in range(r.randrange(1, windows + 1)):
                n = min(WINDOW, quota)
                sent = [frames.next() for _ in range(n)]
                await conn.window(sent, frames.seed, tally)
                tally.frames += n
                quota -= n
                if quota <= 0:
                    break
            await _end(conn, endings[r.randrange(len(endings))], frames, tally)


def send(
    path: Path,
    seed: int,
    methods: Any,
    refuse: frozenset[str],
    frames: int,
    rare: frozenset[str] = frozenset(),
    connections: int = 4,
    classes: tuple[str, ...] | None = None,
    endings: tuple[str, ...] = ENDINGS,
    windows: int = 40,
) -> Tally:
    """``frames`` hostile frames over ``connections`` concurrent connections to the
    daemon at ``path``, each connection from its own seed (``seed`` + its number),
    ending after up to ``windows`` windows in one of ``endings``."""
    tally = Tally()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            for c in range(connections):
                gen = Frames(seed + c, methods, refuse, rare)
                if classes is not None:
                    gen.only(classes)
                share = frames // connections + (c < frames % connections)
                nursery.start_soon(_client, path, gen, share, tally, endings, windows)

    trio.run(main)
    return tally


def seed() -> int:
    """``TSUKU_HOSTILE_SEED`` to replay a run, else a new one (a failure names it)."""
    named = os.environ.get("TSUKU_HOSTILE_SEED")
    return int(named) if named else time.time_ns() % 1_000_000_007
