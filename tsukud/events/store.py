"""The event store: one SQLite file in WAL mode, one batching writer.

Appends are sequenced and hash-chained synchronously in the trio thread (so ids, order
and hashes are decided the moment a caller appends, and projections can fold the event
at once), then written by a single writer task that commits whole batches from a worker
thread. A caller that must not proceed before its event is on disk awaits
``wait_durable``; with ``synchronous=FULL`` a commit has been fsynced by then. Batching is
what lets many appenders share one fsync.

Queries run in worker threads on a small pool of read-only connections
(``readers.ReadPool``): WAL readers never block the writer or each other, the event loop
never blocks on SQLite, and the writer's connection is used for writes only.

A batch that cannot be written is rolled back whole. On a full disk the writer stays: the
batch (and what queued behind it) keeps its ids and hashes and is tried again every
``retry_s``, new appends are refused with ``DiskFull`` (no id handed out), and waiters of
the unwritten events get ``DiskFull`` too: their events were never acknowledged. Once a
retry commits, appends work again. Any other failure (an I/O error) ends the writer: ids
and hashes after the batch were already handed out, so nothing later could join the
chain. From then on appends and their waiters get ``LedgerCorrupt`` (instead of waiting
for a writer that is gone) until the daemon restarts and rebuilds from what is on disk.

After each committed batch the writer replaces the checkpoint (``integrity``): the last
id and hash, kept outside the database so that losing its newest rows shows.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import operator
import os
import re
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import trio

from tsukud import log
from tsukud.clock import Clock, iso
from tsukud.errors import InvalidParams, LedgerCorrupt, LedgerUnavailable
from tsukud.events import catalogue, integrity, rollups
from tsukud.events.chain import (
    GENESIS,
    Anchor,
    Damage,
    VerifyReport,
    anchor_damage,
    check_chain,
    link_encoded,
    link_many,
)
from tsukud.events.readers import ReadPool
from tsukud.fsutil import disk_full
from tsukud.secrets import REDACTOR, Redactor

_SCHEMA = (Path(__file__).with_name("events.sql")).read_text()
_TYPE_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
_INSERT = "INSERT INTO events (id, ts, type, session, payload, hash) VALUES (?, ?, ?, ?, ?, ?)"
# A batch is inserted this many rows per statement: one statement step per hundred rows
# instead of one each (the per-row reset, bind loop and GIL hand-off of ``executemany``
# cost about a third of the write; ``bench/event_append.py`` prints both). 600 bound
# values, well within SQLite's limit of 32,766.
ROWS_PER_INSERT = 100
_INSERT_MANY = (
    "INSERT INTO events (id, ts, type, session, payload, hash) VALUES "  # noqa: S608 (placeholders only)
    + ", ".join(["(?, ?, ?, ?, ?, ?)"] * ROWS_PER_INSERT)
)
_encoder = msgspec.json.Encoder(order="sorted")
# Event types already held to ``_TYPE_RE`` (a daemon appends a few dozen types; clients'
# ``client.*`` names are bounded so that a client inventing names cannot grow this).
_WELL_FORMED_TYPES: set[str] = set()
_TYPES_REMEMBERED = 1024
_decoder = msgspec.json.Decoder(dict[str, Any])
# Enough to keep the cores busy with queries, few enough to leave the event loop a CPU.
DEFAULT_READERS = max(2, min(4, os.cpu_count() or 2))
T = TypeVar("T")


class Event(msgspec.Struct, frozen=True):
    id: int
    ts: str
    type: str
    session: str | None
    payload: dict[str, Any]
    hash: str


Row = tuple[int, str, str, str | None, str, str]


class NewEvent(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    """One event a caller asks to append: ``events.append``'s params decode straight
    into a list of these, which ``append_many`` sequences whole. ``omit_defaults``: a
    large append's frame is then checked from its decoded value (``rpc.protocol``'s
    ``decode_call``), not decoded twice. ``gc=False``: a thousand of them per request
    are not tracked by the collector (decoding is a third cheaper); one can hold no
    reference cycle (a payload is JSON, which cannot refer back to its event)."""

    type: str
    payload: dict[str, Any] = {}
    session: str | None = None


_TYPE = operator.attrgetter("type")
_SESSION = operator.attrgetter("session")
_PAYLOAD = operator.attrgetter("payload")


def insert_rows(conn: sqlite3.Connection, rows: Sequence[Row]) -> None:
    """Insert ``rows`` (inside the caller's transaction), ``ROWS_PER_INSERT`` a statement
    and the rest one by one: the same rows as ``executemany`` of ``_INSERT``."""
    whole = len(rows) - len(rows) % ROWS_PER_INSERT
    if whole:
        values = list(itertools.chain.from_iterable(rows[:whole]))
        width = 6 * ROWS_PER_INSERT
        conn.executemany(_INSERT_MANY, [values[i : i + width] for i in range(0, whole * 6, width)])
    if whole < len(rows):
        conn.executemany(_INSERT, rows[whole:])


def row_to_event(row: Sequence[Any]) -> Event:
    return Event(row[0], row[1], row[2], row[3], _decoder.decode(row[4]), row[5])


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    else:
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 5000")
    return conn


class EventStore:
    """The ledger on SQLite, and the storage interface a shared ledger implements too
    (``pg_store.PgEventStore``): ``open`` (find the chain's head), ``_write`` (commit one
    batch whole), ``readers``/``read``/``read_sync`` (connections whose ``events`` is this
    daemon's chain, ``id`` its sequence), ``verify`` and ``close_connection``. Sequencing,
    hashing, batching, waiting and the writer's states are shared, so both backends make
    the same promises."""

    backend = "sqlite"
    origin: str | None = None  # this daemon's chain in a shared ledger (None: SQLite)

    def __init__(
        self,
        path: Path,
        *,
        clock: Clock,
        redactor: Redactor = REDACTOR,
        batch_max: int = 5000,
        checkpoint: Path | None = None,
        readers: int = DEFAULT_READERS,
    ) -> None:
        self.path = path
        self.checkpoint_path = checkpoint or integrity.checkpoint_path_for(path)
        self._checkpoints = integrity.CheckpointWriter(self.checkpoint_path)
        self._clock = clock
        self._redactor = redactor
        self._batch_max = batch_max
        self._buffer: list[Row] = []
        self._counts: list[rollups.Counted] = []  # what each buffered row adds to the rollups
        self._has_data = trio.Event()
        self._flushed = trio.Event()
        self._closed = False
        self._conn: sqlite3.Connection | None = None
        self.last_id = 0
        self.last_hash = GENESIS
        self.durable_id = 0
        self.durable_hash = GENESIS
        self.adopted = False  # opened a ledger that had no checkpoint (see open())
        self.retry_s = 1.0  # how often a full disk is tried again
        self._disk_full = False  # the last write found no space; pending rows wait
        # The last write could not reach the database (a shared ledger): pending rows
        # wait and are tried again, as on a full disk. Why, for ``status`` and errors.
        self._unreachable: str | None = None
        self._closing = trio.Event()
        self._listeners: list[tuple[Callable[[Event], None], Collection[str] | None]] = []
        # The types any listener folds (None: one takes every type), so an event no
        # listener wants (a client's note) is never built as an ``Event``.
        self._wanted: set[str] | None = set()
        self._writer_gone = False  # run() has returned: nothing more will be written
        self.rollups_stale = False  # verify found them off: the writer rebuilds them next
        # The rollups count every committed event; while not (no space to catch up at
        # start), batches leave them alone and summaries read the events instead.
        self._rollups_current = True
        self._failure: str | None = None  # why it returned early (a failed batch)
        # A shared ledger: every origin with its chain's length and role, as last read.
        self.team: list[dict[str, Any]] = []
        self.readers = ReadPool(lambda: connect(self.path, readonly=True), readers)

    # ---- lifecycle -------------------------------------------------------------------

    def open(self, *, accept: bool = False) -> None:
        """Create or open the database, find the chain's head and hold it to the
        checkpoint. Blocking: start-up only.

        Raises ``LedgerCorrupt`` (what was lost, what to do) when the database ends before
        the checkpoint or disagrees with it, when a ledger with events has no checkpoint
        (deleting it with the newest rows would otherwise hide the loss), or when it is
        not a readable database at all. ``accept`` (``tsukud --accept-ledger``, a
        person's explicit act) adopts a ledger that lost rows or its checkpoint as it
        is, and records what was lost in a ``ledger.adopted`` event. A rewritten chain
        is never adopted: it is not a loss but an edit.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.checkpoint_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        conn = connect(self.path)
        try:
            with integrity.reading(self.path):
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = FULL")
                conn.executescript(_SCHEMA)
                row = conn.execute(
                    "SELECT id, hash FROM events ORDER BY id DESC LIMIT 1"
                ).fetchone()
                if row is not None:
                    self.last_id, self.last_hash = int(row[0]), str(row[1])
                anchor, loss = integrity.held_to_checkpoint(
                    functools.partial(self._check_checkpoint, conn),
                    ledger=f"the event ledger {self.path}",
                    checkpoint=self.checkpoint_path,
                    last_id=self.last_id,
                    accept=accept,
                )
                gaps = integrity.missing_rows(conn, self.last_id) if anchor is None else 0
                folded = self._catch_up_rollups(conn)
        except sqlite3.Error as e:
            conn.close()
            if integrity.is_disk_full(e, self.path):
                raise disk_full(self.path, "cannot open the event ledger") from None
            raise
        except BaseException:
            conn.close()
            raise
        self.durable_id, self.durable_hash = self.last_id, self.last_hash
        self._conn = conn
        if folded:
            log.get().info("ledger.rollups_caught_up", events=folded, last_id=self.last_id)
        with contextlib.suppress(OSError):
            self.path.chmod(0o600)
        # An empty ledger without a checkpoint is a new home: nothing is adopted, so no
        # event (every first start would record one). The limit, documented in
        # docs/events.md: a database *and* checkpoint both removed look the same.
        if loss is not None:
            self._adopt(loss, gaps)

    def _check_checkpoint(self, conn: sqlite3.Connection) -> Anchor | None:
        """The checkpoint, the head held to it and no rows missing below it."""
        db, checkpoint, last_id = self.path, self.checkpoint_path, self.last_id
        anchor = integrity.check_head(conn, db=db, checkpoint=checkpoint, last_id=last_id)
        if anchor is not None:
            integrity.check_rows(conn, db=db, checkpoint=checkpoint, last_id=last_id)
        return anchor

    def _adopt(self, loss: LedgerCorrupt, gaps: int) -> None:
        """Record that a person accepted the ledger as it is (``--accept-ledger``), with
        what was lost. Recorded rather than written to the checkpoint here: until this
        event is committed (which writes the checkpoint) a crash just asks again."""
        self.adopted = True
        log.get().warning(
            "ledger.adopted", last_id=self.last_id, head=self.last_hash, reason=loss.message
        )
        adopted: dict[str, Any] = {
            "last_id": self.last_id,
            "head": self.last_hash,
            "reason": f"accepted with tsukud --accept-ledger: {loss.message}",
        }
        for key in ("lost_from", "lost_to", "lost_count"):
            if key in loss.data:
                adopted[key] = loss.data[key]
        if gaps > 0:
            adopted["missing"] = gaps  # accepted: later starts expect this many gaps
        self.append_nowait("ledger.adopted", adopted)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The single writer. Returns after ``close()`` once everything is on disk (or,
        on a full disk, after one last try), or after a batch failed to commit (see
        ``failure``)."""
        task_status.started()
        try:
            while True:
                if self.rollups_stale and not self._disk_full:
                    with trio.CancelScope(shield=True):
                        await trio.to_thread.run_sync(self._rebuild_rollups)
                if not self._buffer:
                    if self._closed:
                        return
                    await self._has_data.wait()
                    self._has_data = trio.Event()
                    continue
                if (self._disk_full or self._unreachable) and not self._closed:
                    with trio.move_on_after(self.retry_s):
                        await self._closing.wait()  # a stop tries once more, at once
                batch = self._buffer[: self._batch_max]
                counts = self._counts[: len(batch)]
                try:
                    # Shielded: a cancelled daemon still finishes the commit it started,
                    # so an id that was handed out is either on disk or the process died.
                    with trio.CancelScope(shield=True):
                        stale = await trio.to_thread.run_sync(self._write, batch, counts)
                except LedgerCorrupt as e:
                    self._failure = e.message
                    log.get().error("ledger.write_refused", error=e.message)
                    return
                except LedgerUnavailable as e:
                    what = f"events {batch[0][0]}-{self.last_id}"
                    self._cannot_reach(str(e.data.get("cause", e.message)))
                    if not self._closed:
                        continue
                    self._failure = f"{what} were not written: {e.message} at stop"
                    log.get().error("ledger.unwritten_at_stop", error=self._failure)
                    return
                except (sqlite3.Error, OSError) as e:
                    what = f"events {batch[0][0]}-{self.last_id}"
                    if integrity.is_disk_full(e, self.path):
                        self._no_space(what)
                        if not self._closed:
                            continue
                        self._failure = f"{what} were not written: no space left at stop"
                        log.get().error("ledger.unwritten_at_stop", error=self._failure)
                        return
                    self._failure = f"{what} could not be written: {e}"
                    log.get().error("ledger.write_failed", error=self._failure)
                    return
                del self._buffer[: len(batch)]
                del self._counts[: len(batch)]
                self.durable_id, self.durable_hash = batch[-1][0], batch[-1][5]
                if self._disk_full:
                    self._disk_full = False
                    log.get().info("ledger.disk_space_back", durable_id=self.durable_id)
                if self._unreachable is not None:
                    self._unreachable = None
                    log.get().info("ledger.reachable_again", durable_id=self.durable_id)
                if stale is not None:
                    log.get().error("ledger.checkpoint_not_written", error=stale)
                self._flushed.set()
                self._flushed = trio.Event()
        finally:
            self._writer_gone = True
            self._flushed.set()  # wake every waiter: its event will never be written now

    def _no_space(self, what: str) -> None:
        """The batch was rolled back for want of space: keep it (ids and hashes are
        handed out), refuse new appends, tell its waiters, try again later."""
        if not self._disk_full:
            err = disk_full(self.path, f"{what} are waiting for space")
            log.get().error(
                "ledger.disk_full", error=err.message, free_bytes=err.data["free_bytes"]
            )
        self._disk_full = True
        self._flushed.set()  # waiters of the unwritten events get DiskFull
        self._flushed = trio.Event()

    def _cannot_reach(self, why: str) -> None:
        """The database did not answer: keep the batch (its ids and hashes are handed
        out), refuse new appends, tell its waiters, try again later."""
        if self._unreachable is None:
            log.get().error("ledger.unreachable", error=why, durable_id=self.durable_id)
        self._unreachable = why
        self._flushed.set()  # waiters of the unwritten events get LedgerUnavailable
        self._flushed = trio.Event()

    def _unavailable(self, what: str) -> LedgerUnavailable:
        return LedgerUnavailable(
            f"{what}: the shared ledger cannot be reached ({self._unreachable})",
            waiting=self.last_id - self.durable_id,
            durable_id=self.durable_id,
        )

    def close(self) -> None:
        """Stop accepting; ``run`` drains the buffer and returns."""
        self._closed = True
        self._has_data.set()
        self._closing.set()

    def close_connection(self) -> None:
        self.readers.close()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _catch_up_rollups(self, conn: sqlite3.Connection) -> int:
        """Fold what the rollups lag behind; on a full disk, go on without them (reads
        must keep working) and let the writer try again."""
        try:
            return rollups.catch_up(conn, self.last_id)
        except sqlite3.Error as e:
            if not integrity.is_disk_full(e, self.path):
                raise
            log.get().warning("ledger.rollups_behind", error=str(e))
            self._rollups_current = False
            self.rollups_stale = True
            return 0

    def _rebuild_rollups(self) -> None:
        """Rebuild the summary rollups from the events written so far (between batches,
        on the writer's connection). A failure leaves them as they were, logged."""
        assert self._conn is not None
        try:
            folded = rollups.catch_up(self._conn, self.durable_id, rebuild=True)
        except (sqlite3.Error, OSError) as e:
            log.get().error("ledger.rollups_not_rebuilt", error=str(e))
        else:
            log.get().warning("ledger.rollups_rebuilt", events=folded)
            self._rollups_current = True
        self.rollups_stale = False

    def _write(self, rows: list[Row], counts: list[rollups.Counted]) -> str | None:
        """Commit ``rows`` whole, with the rollups they add up to, then move the
        checkpoint to the last of them. Returns why the checkpoint was not moved, if it
        was not: the rows are committed all the same, and a lagging checkpoint only
        checks less."""
        assert self._conn is not None
        conn = self._conn
        # Added up before the transaction: the write lock is held for SQLite work only.
        sums = rollups.add_up(counts, [row[3] for row in rows])
        conn.execute("BEGIN IMMEDIATE")
        try:
            self._check_predecessor(conn, rows[0][0] - 1)
            insert_rows(conn, rows)
            if self._rollups_current:
                rollups.upsert(conn, sums, rows[-1][0])
            conn.execute("COMMIT")
        except BaseException:
            # The whole batch or nothing: no partial batch may reach the disk. (SQLite
            # may already have rolled back on its own, e.g. on SQLITE_FULL.)
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        try:
            self._checkpoints.write(rows[-1][0], rows[-1][5])
        except OSError as e:
            return str(e)
        return None

    def _check_predecessor(self, conn: sqlite3.Connection, prev_id: int) -> None:
        """Refuse to chain a batch onto a ledger changed under the running daemon: the
        newest row must still be the one this writer committed last (one indexed lookup
        per batch). Rows deleted from the middle are caught at the next start."""
        row = conn.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
        found = (0, GENESIS) if row is None else (int(row[0]), str(row[1]))
        if found == (prev_id, self.durable_hash):
            return
        anchor = Anchor(prev_id, self.durable_hash, "the daemon's last commit")
        row = conn.execute("SELECT hash FROM events WHERE id = ?", (prev_id,)).fetchone()
        damage = anchor_damage(anchor, found[0], None if row is None else str(row[0]))
        damage = damage or Damage(
            f"events after {prev_id} were added by something other than this daemon",
            prev_id + 1,
        )
        raise integrity.damaged(damage, db=self.path, checkpoint=self.checkpoint_path)

    # ---- appending -------------------------------------------------------------------

    def subscribe(
        self, listener: Callable[[Event], None], types: Collection[str] | None = None
    ) -> None:
        """Called synchronously with every appended event of ``types`` (None: of every
        type); projections fold here."""
        self._listeners.append((listener, types))
        if types is None:
            self._wanted = None
        elif self._wanted is not None:
            self._wanted.update(types)

    def _notify(self, event: Event) -> None:
        for listener, types in self._listeners:
            if types is None or event.type in types:
                listener(event)

    @property
    def disk_full(self) -> bool:
        """The last write found no space: appends are refused until a retry commits."""
        return self._disk_full

    @property
    def unreachable(self) -> str | None:
        """Why the last write could not reach the database (None: it did, or SQLite)."""
        return self._unreachable

    @property
    def location(self) -> str:
        """Where the events are, as ``status`` shows it (no password)."""
        return str(self.path)

    @property
    def failure(self) -> str | None:
        """Why the writer stopped before ``close()``, if it did."""
        return self._failure

    def _broken(self, what: str) -> LedgerCorrupt:
        return LedgerCorrupt(
            f"{what}: the event ledger's writer has stopped"
            + (f" ({self._failure})" if self._failure else ""),
            hint="Nothing after the last durable event was recorded. Fix the cause (the "
            "daemon log has the error), then restart the daemon (`tsukuctl daemon restart`).",
            durable_id=self.durable_id,
        )

    def _check_appendable(self, what: str) -> None:
        """Refuse to hand out an id the writer could not commit."""
        if self._closed:
            raise RuntimeError("event store is closed")
        if self._disk_full:
            raise disk_full(self.path, f"cannot record {what}")
        if self._unreachable is not None:
            raise self._unavailable(f"cannot record {what}")
        if self._writer_gone:
            raise self._broken(f"cannot record {what}")

    def append_nowait(
        self, type_: str, payload: dict[str, Any] | None = None, session: str | None = None
    ) -> Event:
        self._check_appendable(type_)
        _check_type(type_)
        _check_session(session)
        body = payload or {}
        catalogue.check(type_, body)
        # Encoded once: the text is checked for secrets (str searches: faster than the
        # same over bytes) and stored, the bytes hashed into the chain; only a payload
        # that may hold a secret is encoded again.
        try:
            data = _encoder.encode(body)
        except (TypeError, msgspec.EncodeError) as e:
            raise InvalidParams(f"event payload is not JSON-serialisable: {e}") from None
        text = data.decode()
        if self._redactor.suspect(text):
            body, data, text = self._redacted(body)
        id_ = self.last_id + 1
        ts = iso(self._clock.now())
        h = link_encoded(self.last_hash, id_, ts, type_, session, data)
        self.last_id, self.last_hash = id_, h
        self._buffer.append((id_, ts, type_, session, text, h))
        # Counted now: the caller may reuse its payload dict once this returns.
        self._counts.append(rollups.contribution(ts, type_, body))
        self._has_data.set()
        event = Event(id_, ts, type_, session, body, h)
        if self._wanted is None or type_ in self._wanted:
            self._notify(event)
        return event

    def _redacted(self, body: dict[str, Any]) -> tuple[dict[str, Any], bytes, str]:
        """A payload that may hold a secret, redacted as a structure (so a scrubbed span
        never breaks the JSON around it), and encoded again."""
        body = self._redactor.value(body)
        data = _encoder.encode(body)
        return body, data, data.decode()

    def append_many(self, events: Sequence[NewEvent]) -> tuple[int, int]:
        """Append ``events`` in order, as a whole: every one is checked before any is
        sequenced, so an invalid one refuses them all (named by its index,
        ``events[3].type: ...``) and no id is handed out. Returns the first and last id.

        The same promises as ``append_nowait`` at a fraction of its cost per event (a
        client's batch is the ledger's throughput, ``bench/event_append.py``): the clock
        is read once (the events share their timestamp), the payloads are encoded once
        and searched for secrets as one batch (``Redactor.suspects``: only when the
        batch may hold one is each payload searched, and a suspect one redacted), the
        chain is extended over the bytes stored, the rollups' part is counted once per
        type and session, and an ``Event`` is built only for a type some listener
        folds."""
        if not events:
            raise InvalidParams("events must not be empty")
        self._check_appendable(f"{len(events)} events")
        types = list(map(_TYPE, events))
        sessions = list(map(_SESSION, events))
        payloads = list(map(_PAYLOAD, events))
        _check_batch(types, sessions, payloads)
        try:
            encoded = list(map(_encoder.encode, payloads))
        except (TypeError, msgspec.EncodeError):
            for i, body in enumerate(payloads):
                _at(i, "payload", _encoder.encode, body)
            raise
        texts = list(map(bytes.decode, encoded))
        for i in self._redactor.suspects(texts):
            payloads[i], encoded[i], texts[i] = self._redacted(payloads[i])
        first = self.last_id + 1
        ts = iso(self._clock.now())
        hashes = link_many(self.last_hash, first, ts, types, sessions, encoded)
        counted = rollups.contributions(ts, types, payloads)
        ids = range(first, first + len(events))
        self.last_id, self.last_hash = ids[-1], hashes[-1]
        self._buffer.extend(zip(ids, [ts] * len(ids), types, sessions, texts, hashes, strict=True))
        self._counts.extend(counted)
        self._has_data.set()
        wanted = self._wanted
        if self._listeners and (wanted is None or not wanted.isdisjoint(types)):
            for i, type_ in enumerate(types):
                if wanted is None or type_ in wanted:
                    self._notify(Event(ids[i], ts, type_, sessions[i], payloads[i], hashes[i]))
        return first, ids[-1]

    async def wait_writable(self) -> None:
        """Until appends are taken again (space came back, the database answers) and
        everything appended before is on disk, so a read sees it. Raises as appends do
        once the writer is gone for good."""
        while self._disk_full or self._unreachable is not None or self.durable_id < self.last_id:
            if self._writer_gone:
                raise self._broken("the ledger writer stopped")
            await self._flushed.wait()

    async def wait_durable(self, id_: int) -> None:
        while self.durable_id < id_:
            if self._disk_full:
                raise disk_full(
                    self.path,
                    f"event {id_} is not on disk (it will be once there is space, unless "
                    "the daemon stops first)",
                )
            if self._unreachable is not None:
                raise self._unavailable(
                    f"event {id_} is not written yet (it will be once the database answers, "
                    "unless the daemon stops first)"
                )
            if self._writer_gone:
                raise self._broken(f"event {id_} was not written")
            await self._flushed.wait()

    async def caught_up(self) -> None:
        """Wait until every event sequenced before this call is on disk, so a read that
        follows sees it: a listing right after a start shows its ``ledger.adopted``, a
        listing right after a call shows the call's events. Returns at once on a full disk
        or a gone writer: the read then shows what is on disk rather than waiting forever
        (those states are reported by the appends and by ``status``)."""
        target = self.last_id
        while (
            self.durable_id < target
            and not self._disk_full
            and self._unreachable is None
            and not self._writer_gone
        ):
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

    async def verify(self, head: str | None = None) -> VerifyReport:
        """Recompute the chain and hold it to this writer's last commit, the checkpoint
        and ``head`` (a hash, or a prefix of one, the user noted). Damage of any kind is
        ``LedgerCorrupt`` saying what was lost and what to do. Summary rollups that do not
        add up to the events are rebuilt by the writer (``rollups_stale`` until then)."""
        # Taken before the read starts, so the snapshot the read sees contains it.
        anchors = [Anchor(self.durable_id, self.durable_hash, "the daemon's last commit")]

        def work(conn: sqlite3.Connection) -> tuple[VerifyReport, bool]:
            checkpoint = integrity.read_checkpoint(self.checkpoint_path)
            if checkpoint is not None:
                anchors.append(checkpoint)
            with integrity.reading(self.path):
                problems = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)")]
                if problems != ["ok"]:
                    raise integrity.malformed(self.path, "; ".join(problems))
                report = verify_chain(conn, anchors, head)
                # Derived data, outside the chain: held to the events in the same snapshot.
                return report, report.damage is not None or rollups.agree(conn)

        report, rollups_agree = await self.read(work, heavy=True)
        if not rollups_agree:
            self._rollups_off()
        if report.damage is not None:
            raise integrity.damaged(
                report.damage,
                db=self.path,
                checkpoint=self.checkpoint_path,
                checked=report.checked,
            )
        return report

    def _rollups_off(self) -> None:
        """Verify found the summary rollups not adding up to the events: the writer
        rebuilds them before its next batch, and ``events verify`` says so."""
        log.get().warning("ledger.rollups_disagree", durable_id=self.durable_id)
        self.rollups_stale = True
        self._has_data.set()  # wake the writer, which rebuilds them

    async def refresh_team(self) -> None:
        """Read every origin's chain for ``status`` into ``team`` (a shared ledger's,
        ``pg_store``). SQLite: one chain, this daemon's."""

    async def record_anchor(self) -> None:
        """Record every origin's head in this chain (a shared ledger's anchors,
        ``pg_store``). SQLite has one chain, held to its checkpoint file: nothing to do."""

    # ---- reading ---------------------------------------------------------------------

    async def read(
        self,
        fn: Callable[[sqlite3.Connection], T],
        *,
        heavy: bool = False,
        limit: float | None = None,
    ) -> T:
        """Run ``fn`` on a pooled read-only connection in a worker thread; cancelling the
        caller interrupts the query. ``heavy``: it may scan much of the ledger (summaries,
        verification, unbounded listings), so it must leave a connection for quick reads.
        ``limit``: seconds it may hold its connection before it is interrupted
        (``readers.ReadTooSlow``).
        """
        return await self.readers.run(fn, heavy=heavy, limit=limit)

    def read_sync(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        conn = connect(self.path, readonly=True)
        try:
            return fn(conn)
        finally:
            conn.close()


def _check_type(type_: str) -> None:
    if type_ in _WELL_FORMED_TYPES:
        return
    if not _TYPE_RE.match(type_):
        raise InvalidParams(
            f"invalid event type {type_!r}",
            hint="Event types are dotted lowercase words, e.g. 'install.completed'.",
        )
    if len(_WELL_FORMED_TYPES) < _TYPES_REMEMBERED:
        _WELL_FORMED_TYPES.add(type_)


def _check_session(session: str | None) -> None:
    if session is not None and (len(session) > 128 or not session.isprintable()):
        raise InvalidParams("invalid session id", hint="Up to 128 printable characters.")


def _check_batch(
    types: Sequence[str], sessions: Sequence[str | None], payloads: Sequence[dict[str, Any]]
) -> None:
    """Refuse a batch at its first event that ``append_nowait`` would refuse. Each
    distinct type and session is checked once (found in C: a batch of 10,000 distinct
    sessions costs 10,000 checks), and only a refused one has its first index looked
    up."""
    distinct_types = dict.fromkeys(types)  # found in C
    refused = [types.index(t) for t in distinct_types if not _acceptable(_check_type, t)]
    refused += [
        sessions.index(s)
        for s in dict.fromkeys(sessions)
        if s is not None and not _acceptable(_check_session, s)
    ]
    if refused:  # the first event refused, named by its index
        i = min(refused)
        _at(i, "type", _check_type, types[i])
        _at(i, "session", _check_session, sessions[i])
    declared = {t for t in distinct_types if not catalogue.free_form(t)}
    if declared:
        for i, type_ in enumerate(types):
            if type_ in declared:
                _at(i, "payload", catalogue.check, type_, payloads[i])


def _acceptable(check: Callable[[str], None], value: str) -> bool:
    try:
        check(value)
    except InvalidParams:
        return False
    return True


def _at(index: int, field: str, check: Callable[..., object], *args: Any) -> None:
    """Run ``check``; its refusal names the event of a batch it is about."""
    try:
        check(*args)
    except InvalidParams as e:
        raise InvalidParams(f"events[{index}].{field}: {e.message}", hint=e.hint) from None
    except (TypeError, msgspec.EncodeError) as e:
        raise InvalidParams(
            f"events[{index}].{field}: event payload is not JSON-serialisable: {e}"
        ) from None


def iter_rows(
    conn: sqlite3.Connection, sql: str, params: Iterable[Any] = (), chunk: int = 2000
) -> Iterator[list[Any]]:
    cur = conn.execute(sql, tuple(params))
    while True:
        rows = cur.fetchmany(chunk)
        if not rows:
            return
        yield rows


def verify_chain(
    conn: sqlite3.Connection, anchors: Sequence[Anchor] = (), head: str | None = None
) -> VerifyReport:
    """Recompute every hash (the first row that does not match is where editing began)
    and hold the chain to ``anchors`` and the ``head`` a user noted."""
    return check_chain(
        iter_rows(
            conn, "SELECT id, ts, type, session, payload, hash FROM events ORDER BY id", chunk=5000
        ),
        anchors,
        head,
    )
