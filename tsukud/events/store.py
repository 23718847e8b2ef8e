"""The event store: one SQLite file in WAL mode, one batching writer.

Appends are sequenced and hash-chained synchronously in the trio thread (so ids, order
and hashes are decided the moment a caller appends, and projections can fold the event
at once), then written by a single writer task that commits whole batches from a worker
thread. A caller that must not proceed before its event is on disk awaits
``wait_durable``; with ``synchronous=FULL`` a commit has been fsynced by then. Batching is
what lets many appenders share one fsync.

Queries run on their own short-lived connections in worker threads: WAL readers never
block the writer and the event loop never blocks on SQLite.

A batch that cannot be written (disk full, I/O error) is rolled back whole and ends the
writer: ids and hashes after it were already handed out, so nothing later could join the
chain. From then on appends and their waiters get ``LedgerCorrupt`` (instead of waiting
for a writer that is gone) until the daemon restarts and rebuilds from what is on disk.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import trio

from tsukud import log
from tsukud.clock import Clock, iso
from tsukud.errors import InvalidParams, LedgerCorrupt
from tsukud.events import catalogue
from tsukud.events.chain import GENESIS, link
from tsukud.secrets import REDACTOR, Redactor

_SCHEMA = (Path(__file__).with_name("events.sql")).read_text()
_TYPE_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
_INSERT = "INSERT INTO events (id, ts, type, session, payload, hash) VALUES (?, ?, ?, ?, ?, ?)"
_encoder = msgspec.json.Encoder(order="sorted")
_decoder = msgspec.json.Decoder(dict[str, Any])


class Event(msgspec.Struct, frozen=True):
    id: int
    ts: str
    type: str
    session: str | None
    payload: dict[str, Any]
    hash: str


Row = tuple[int, str, str, str | None, str, str]


def row_to_event(row: Sequence[Any]) -> Event:
    return Event(row[0], row[1], row[2], row[3], _decoder.decode(row[4]), row[5])


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    else:
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 5000")
    return conn


@dataclass(frozen=True)
class VerifyReport:
    ok: bool
    checked: int
    first_bad_id: int | None = None
    reason: str = ""


class EventStore:
    def __init__(
        self,
        path: Path,
        *,
        clock: Clock,
        redactor: Redactor = REDACTOR,
        batch_max: int = 5000,
    ) -> None:
        self.path = path
        self._clock = clock
        self._redactor = redactor
        self._batch_max = batch_max
        self._buffer: list[Row] = []
        self._has_data = trio.Event()
        self._flushed = trio.Event()
        self._closed = False
        self._conn: sqlite3.Connection | None = None
        self.last_id = 0
        self.last_hash = GENESIS
        self.durable_id = 0
        self._listeners: list[Callable[[Event], None]] = []
        self._writer_gone = False  # run() has returned: nothing more will be written
        self._failure: str | None = None  # why it returned early (a failed batch)

    # ---- lifecycle -------------------------------------------------------------------

    def open(self) -> None:
        """Create or open the database and find the chain's head. Blocking: start-up only."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        conn = connect(self.path)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.executescript(_SCHEMA)
        row = conn.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
        if row is not None:
            self.last_id, self.last_hash = int(row[0]), str(row[1])
        self.durable_id = self.last_id
        self._conn = conn
        with contextlib.suppress(OSError):
            self.path.chmod(0o600)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The single writer. Returns after ``close()`` once everything is on disk, or
        after a batch failed to commit (see ``failure``)."""
        task_status.started()
        try:
            while True:
                if not self._buffer:
                    if self._closed:
                        return
                    await self._has_data.wait()
                    self._has_data = trio.Event()
                    continue
                batch = self._buffer[: self._batch_max]
                del self._buffer[: self._batch_max]
                try:
                    # Shielded: a cancelled daemon still finishes the commit it started,
                    # so an id that was handed out is either on disk or the process died.
                    with trio.CancelScope(shield=True):
                        await trio.to_thread.run_sync(self._write, batch)
                except (sqlite3.Error, OSError) as e:
                    self._failure = (
                        f"events {batch[0][0]}-{self.last_id} could not be written: {e}"
                    )
                    log.get().error("ledger.write_failed", error=self._failure)
                    return
                self.durable_id = batch[-1][0]
                self._flushed.set()
                self._flushed = trio.Event()
        finally:
            self._writer_gone = True
            self._flushed.set()  # wake every waiter: its event will never be written now

    def close(self) -> None:
        """Stop accepting; ``run`` drains the buffer and returns."""
        self._closed = True
        self._has_data.set()

    def close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _write(self, rows: list[Row]) -> None:
        assert self._conn is not None
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(_INSERT, rows)
            conn.execute("COMMIT")
        except BaseException:
            # The whole batch or nothing: no partial batch may reach the disk. (SQLite
            # may already have rolled back on its own, e.g. on SQLITE_FULL.)
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    # ---- appending -------------------------------------------------------------------

    def subscribe(self, listener: Callable[[Event], None]) -> None:
        """Called synchronously with every appended event (projections fold here)."""
        self._listeners.append(listener)

    @property
    def failure(self) -> str | None:
        """Why the writer stopped before ``close()``, if it did."""
        return self._failure

    def _broken(self, what: str) -> LedgerCorrupt:
        return LedgerCorrupt(
            f"{what}: the event ledger's writer has stopped"
            + (f" ({self._failure})" if self._failure else ""),
            hint="Nothing after the last durable event was recorded. Fix the cause (e.g. "
            "free disk space), then restart the daemon (`tsukuctl daemon restart`).",
            durable_id=self.durable_id,
        )

    def append_nowait(
        self, type_: str, payload: dict[str, Any] | None = None, session: str | None = None
    ) -> Event:
        if self._closed:
            raise RuntimeError("event store is closed")
        if self._writer_gone:
            raise self._broken(f"cannot record {type_}")
        if not _TYPE_RE.match(type_):
            raise InvalidParams(
                f"invalid event type {type_!r}",
                hint="Event types are dotted lowercase words, e.g. 'install.completed'.",
            )
        if session is not None and (len(session) > 128 or not session.isprintable()):
            raise InvalidParams("invalid session id", hint="Up to 128 printable characters.")
        body = payload or {}
        catalogue.check(type_, body)
        try:
            text = _encoder.encode(body).decode()
        except (TypeError, msgspec.EncodeError) as e:
            raise InvalidParams(f"event payload is not JSON-serialisable: {e}") from None
        if self._redactor.suspect(text):
            # Redacted as a structure, so a scrubbed span never breaks the JSON around it.
            body = self._redactor.value(body)
            text = _encoder.encode(body).decode()
        id_ = self.last_id + 1
        ts = iso(self._clock.now())
        h = link(self.last_hash, id_, ts, type_, session, text)
        self.last_id, self.last_hash = id_, h
        self._buffer.append((id_, ts, type_, session, text, h))
        self._has_data.set()
        event = Event(id_, ts, type_, session, body, h)
        for listener in self._listeners:
            listener(event)
        return event

    async def wait_durable(self, id_: int) -> None:
        while self.durable_id < id_:
            if self._writer_gone:
                raise self._broken(f"event {id_} was not written")
            await self._flushed.wait()

    async def append(
        self,
        type_: str,
        payload: dict[str, Any] | None = None,
        session: str | None = None,
        *,
        durable: bool = True,
    ) -> Event:
        event = self.append_nowait(type_, payload, session)
        if durable:
            await self.wait_durable(event.id)
        return event

    # ---- reading ---------------------------------------------------------------------

    async def read(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run ``fn`` on a fresh read connection in a worker thread."""

        def work() -> Any:
            conn = connect(self.path, readonly=True)
            try:
                return fn(conn)
            finally:
                conn.close()

        return await trio.to_thread.run_sync(work, abandon_on_cancel=True)

    def read_sync(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        conn = connect(self.path, readonly=True)
        try:
            return fn(conn)
        finally:
            conn.close()


def iter_rows(
    conn: sqlite3.Connection, sql: str, params: Iterable[Any] = (), chunk: int = 2000
) -> Iterator[list[Any]]:
    cur = conn.execute(sql, tuple(params))
    while True:
        rows = cur.fetchmany(chunk)
        if not rows:
            return
        yield rows


def verify_chain(conn: sqlite3.Connection) -> VerifyReport:
    """Recompute every hash; the first row that does not match is where editing began."""
    prev = GENESIS
    expected_id = 1
    checked = 0
    for rows in iter_rows(
        conn, "SELECT id, ts, type, session, payload, hash FROM events ORDER BY id", chunk=5000
    ):
        for id_, ts, type_, session, payload, h in rows:
            if id_ != expected_id:
                return VerifyReport(
                    False, checked, expected_id, f"event {expected_id} is missing (next is {id_})"
                )
            if link(prev, id_, ts, type_, session, payload) != h:
                return VerifyReport(False, checked, id_, f"event {id_} does not match its hash")
            prev = h
            expected_id += 1
            checked += 1
    return VerifyReport(True, checked)
