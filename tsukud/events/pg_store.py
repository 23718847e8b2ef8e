"""The event ledger in PostgreSQL (``ledger.url``): the store's storage interface on a
database many daemons share.

Sequencing, hashing, batching and the writer's states are ``EventStore``'s; this module
is the backend: psycopg's sync API on worker threads, one writer connection and a small
pool of read connections, as the SQLite store has. Each daemon is an *origin* (a stable
id kept in its home, ``state/origin``) with a chain of its own: its rows are the SQLite
rows with ``id`` named ``seq``, hashed by the same ``chain.link``, so the same verifier
checks both. A read connection presents this origin's chain as ``events`` (a temporary
view, ``seq AS id``), so the daemon's own reads (projections at start, unfinished runs)
are the same SQL on both backends; listings read every origin's rows from
``tsuku.events``.

The database out of reach is not an error of the chain: a batch that could not be
committed keeps its ids and hashes and is tried again (reconnecting) every ``retry_s``;
meanwhile appends and their waiters get ``ledger_unavailable``. A commit whose answer was
lost with the connection is recognised on the retry by the origin's head (the hash of
the batch's last row), so it is neither lost nor written twice.

psycopg is imported here only: a daemon without ``ledger.url`` never loads it.
"""

from __future__ import annotations

import contextlib
import functools
import re
import secrets
import socket
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

import psycopg
import trio
from psycopg import sql

from tsukud import log
from tsukud.clock import Clock, iso
from tsukud.errors import LedgerCorrupt, LedgerUnavailable
from tsukud.events import anchors, integrity, rollups
from tsukud.events.chain import GENESIS, Anchor, Damage, VerifyReport, anchor_damage, check_chain
from tsukud.events.readers import ReadPool
from tsukud.events.store import DEFAULT_READERS, EventStore, Row, iter_rows, verify_chain
from tsukud.secrets import REDACTOR, Redactor

_HERE = Path(__file__).parent
# Applied in order by every start's migration (each file is idempotent): the ledger's
# own tables first, then those of the features that share the database (the budget,
# hourly limit and breakers; the batch queue).
SCHEMA_FILES: tuple[Path, ...] = (
    _HERE / "events_pg.sql",
    _HERE.parent / "policy" / "policy_pg.sql",
    _HERE.parent / "batch" / "queue_pg.sql",
    _HERE / "roles_pg.sql",
)
# 2: origins belong to a role, row-level security on events and origins (roles_pg.sql).
# 3: summary rollups and each origin's mark of what they count (events_pg.sql).
SCHEMA_VERSION = 3
# Held while the schema is created or migrated: daemons starting together take turns.
_MIGRATE_LOCK = 0x7473756B  # "tsuk"
_ORIGIN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# A dead network must not hang a writer thread for the kernel's TCP timeouts: libpq gives
# up on a connection attempt, and on unacknowledged data, after these.
CONNECT_TIMEOUT_S = 5
TCP_USER_TIMEOUT_MS = 10_000
TEAM_GLANCE_S = 1.0  # how long ``status`` waits for the team's heads
_COPY = "COPY tsuku.events (origin, seq, ts, type, session, payload, hash) FROM STDIN"
# A daemon's own role is bound by row-level security, which COPY FROM does not support.
_INSERT = (
    "INSERT INTO tsuku.events (origin, seq, ts, type, session, payload, hash)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s)"
)


def shown_url(url: str) -> str:
    """``url`` without its password, for ``status`` and messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def load_origin(path: Path) -> str:
    """This home's origin id, made at its first start on a shared ledger and kept: a
    restarted daemon goes on with its own chain. The host name is in it for people; the
    random part makes two homes on one host two origins."""
    try:
        origin = path.read_text().strip()
    except FileNotFoundError:
        host = re.sub(r"[^A-Za-z0-9-]", "", socket.gethostname().split(".")[0])[:24] or "host"
        origin = f"{host}-{secrets.token_hex(4)}"
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.write_text(origin + "\n")
        return origin
    if not _ORIGIN_RE.match(origin):
        raise LedgerCorrupt(
            f"{path} does not hold an origin id (got {origin[:40]!r})",
            hint="It names this daemon's chain in the shared ledger; restore it from a "
            "backup of this home (a new id starts a new chain).",
        )
    return origin


def first_line(e: psycopg.Error) -> str:
    """What the database (or libpq) said, in one line."""
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def unreachable(e: psycopg.Error) -> LedgerUnavailable:
    why = first_line(e)
    return LedgerUnavailable(f"the shared ledger cannot be reached: {why}", cause=why)


def migrate(conn: psycopg.Connection[Any]) -> None:
    """Create or migrate the schema (every file of ``SCHEMA_FILES``, each idempotent),
    in one transaction under an advisory lock, so daemons starting together take turns.
    A schema already at this version is left alone: its DDL (a trigger replaced, a
    column added if missing) takes locks on tables the running daemons are using, and
    a daemon restarting among them (after a crash) would wait behind them or be chosen
    as a deadlock's victim and refuse to start. Such a deadlock during a real migration
    is tried again. A role that does not own the schema (a daemon's own role,
    docs/design/scale.md) may not change it: it checks the version the owner's
    migration left and goes on."""
    for attempt in range(MIGRATE_TRIES):
        try:
            _migrate_once(conn)
            return
        except psycopg.errors.DeadlockDetected:
            if attempt == MIGRATE_TRIES - 1:
                raise


MIGRATE_TRIES = 3


def _migrate_once(conn: psycopg.Connection[Any]) -> None:
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATE_LOCK,))
        version = 0
        has_meta = conn.execute("SELECT to_regclass('tsuku.meta') IS NOT NULL").fetchone()
        if has_meta is not None and has_meta[0]:
            row = conn.execute(
                "SELECT value FROM tsuku.meta WHERE key = 'schema_version'"
            ).fetchone()
            version = 0 if row is None else int(row[0])
        if version > SCHEMA_VERSION:
            raise LedgerCorrupt(
                f"the shared ledger's schema is version {version}; this tsukud "
                f"knows up to {SCHEMA_VERSION}",
                hint="A newer tsukud migrated it: upgrade this one (an old daemon "
                "never writes through a schema it does not know).",
            )
        owns = conn.execute(
            "SELECT pg_has_role(nspowner, 'USAGE') FROM pg_namespace WHERE nspname = 'tsuku'"
        ).fetchone()
        if owns is not None and not owns[0]:
            if version < SCHEMA_VERSION:
                raise LedgerUnavailable(
                    f"the shared ledger's schema is version {version}; this tsukud needs "
                    f"{SCHEMA_VERSION}, and its role does not own the schema to migrate it",
                    hint="Start one daemon (or `tsukud`) connecting as the schema's owner "
                    "once: it migrates; then grant the daemon roles again "
                    "(docs/design/scale.md, operating notes).",
                    cause="schema not migrated",
                )
            return
        if version == SCHEMA_VERSION:
            return
        for schema in SCHEMA_FILES:
            conn.execute(schema.read_bytes())
        conn.execute(
            "INSERT INTO tsuku.meta (key, value) VALUES ('schema_version', %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(SCHEMA_VERSION),),
        )


def _connect(url: str, *, autocommit: bool = True) -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(
            url,
            autocommit=autocommit,
            connect_timeout=CONNECT_TIMEOUT_S,
            tcp_user_timeout=TCP_USER_TIMEOUT_MS,
            keepalives=1,
            keepalives_idle=10,
            keepalives_interval=5,
            keepalives_count=3,
            application_name="tsukud",
            options="-c search_path=tsuku",
        )
    except psycopg.Error as e:
        raise unreachable(e) from None


@functools.lru_cache(maxsize=512)
def _paramstyle(text: str) -> str:
    """SQLite's ``?`` placeholders as psycopg's ``%s`` (the ledger's SQL binds every value,
    so a ``?`` is never inside a literal)."""
    return text.replace("%", "%%").replace("?", "%s")


class Qmark:
    """The writer's connection as the ledger's SQL speaks to it (``?`` placeholders):
    what ``rollups``' statements are run through."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, text: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        return self._conn.execute(_paramstyle(text), tuple(params))


class PgReadConnection:
    """A read connection presenting the part of ``sqlite3.Connection`` the ledger's read
    functions use (``execute`` with ``?`` placeholders, rows as tuples, ``interrupt``),
    with this origin's chain as ``events``. Autocommit: each statement sees what was
    committed when it began."""

    def __init__(self, url: str, origin: str) -> None:
        self._url, self._origin = url, origin
        self.broken = False
        self._conn = self._open()

    def _open(self) -> psycopg.Connection[Any]:
        conn = _connect(self._url)
        try:
            conn.execute(
                sql.SQL(
                    "CREATE TEMP VIEW events AS SELECT seq AS id, ts, type, session, payload,"
                    " hash FROM tsuku.events WHERE origin = {}"
                ).format(sql.Literal(self._origin))
            )
            # Read-only from here on (the view had to be made first), as SQLite's
            # readers are opened read-only: a read function cannot write the ledger.
            conn.execute("SET default_transaction_read_only = on")
        except psycopg.Error as e:
            conn.close()
            raise unreachable(e) from None
        return conn

    def execute(self, text: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        """Run one statement. A pooled connection the network broke while it was idle is
        found out here: the statement (a read) is run again once on a new connection."""
        query, args = _paramstyle(text), tuple(params)
        try:
            return self._conn.execute(query, args)
        except psycopg.errors.QueryCanceled:
            raise
        except (psycopg.OperationalError, psycopg.InterfaceError) as e:
            if not (self._conn.broken or self._conn.closed):
                raise unreachable(e) from None
        self._conn.close()
        try:
            self._conn = self._open()
            return self._conn.execute(query, args)
        except psycopg.errors.QueryCanceled:
            raise
        except (psycopg.OperationalError, psycopg.InterfaceError) as e:
            self.broken = True
            raise unreachable(e) from None
        except LedgerUnavailable:
            self.broken = True
            raise

    @property
    def in_transaction(self) -> bool:
        """Inside a transaction a read began (``BEGIN``: one snapshot for its reads)."""
        return self._conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def interrupt(self) -> None:
        with contextlib.suppress(psycopg.Error):
            self._conn.cancel_safe(timeout=2)

    def set_progress_handler(self, handler: Callable[[], object] | None, n: int, /) -> None:
        """SQLite's cancellation window. PostgreSQL has none: a cancel that reaches the
        server before the statement starts is ignored, so the read pool repeats its
        interrupt until the query lets go (``events/readers.py``)."""

    def close(self) -> None:
        self._conn.close()

    @property
    def usable(self) -> bool:
        return not (self.broken or self._conn.broken or self._conn.closed)


class PgEventStore(EventStore):
    backend = "postgresql"
    origin: str  # set by open()

    def __init__(
        self,
        url: str,
        home: Path,
        *,
        clock: Clock,
        redactor: Redactor = REDACTOR,
        batch_max: int = 5000,
        readers: int = DEFAULT_READERS,
    ) -> None:
        state = home / "state"
        super().__init__(
            home / "tsuku.db",  # never opened: SQLite's place, for messages that name it
            clock=clock,
            redactor=redactor,
            batch_max=batch_max,
            checkpoint=state / "shared-ledger.head",
            readers=2,
        )
        self.url = url
        self.origin_path = state / "origin"
        self.origin = ""
        self._writer: psycopg.Connection[Any] | None = None
        self._row_security = False  # bound by roles_pg.sql's policies: INSERT, not COPY
        # Verify found the rollups off (not merely behind): the writer rebuilds them.
        self._rollups_disagree = False
        self.readers = ReadPool(
            cast(Callable[[], sqlite3.Connection], self._open_reader),
            readers,
            healthy=lambda conn: cast(PgReadConnection, conn).usable,
        )

    @property
    def location(self) -> str:
        return shown_url(self.url)

    @property
    def _label(self) -> Path:
        # integrity's messages name "the database": here, this origin's chain in it.
        return Path(f"the shared ledger (origin {self.origin})")

    def _open_reader(self) -> PgReadConnection:
        return PgReadConnection(self.url, self.origin)

    # ---- lifecycle -------------------------------------------------------------------

    def open(self, *, accept: bool = False) -> None:
        """Create or migrate the schema, register this origin, find its chain's head and
        hold it to the checkpoint. Blocking: start-up only. ``ledger_unavailable`` when
        the database cannot be reached, ``ledger_corrupt`` when the chain lost rows or
        its checkpoint (``accept``: adopted as on SQLite, and recorded)."""
        self.origin = load_origin(self.origin_path)
        self.checkpoint_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        conn = _connect(self.url)
        try:
            migrate(conn)
            # A daemon's own role writes through row-level security (roles_pg.sql).
            rls = conn.execute("SELECT row_security_active('tsuku.events')").fetchone()
            self._row_security = bool(rls is not None and rls[0])
            conn.execute(
                "INSERT INTO tsuku.origins (origin, first_seen) VALUES (%s, %s)"
                " ON CONFLICT (origin) DO NOTHING",
                (self.origin, iso(self._clock.now())),
            )
            head = conn.execute(
                "SELECT head_seq, head_hash FROM tsuku.origins WHERE origin = %s", (self.origin,)
            ).fetchone()
            last = conn.execute(
                "SELECT seq, hash FROM tsuku.events WHERE origin = %s ORDER BY seq DESC LIMIT 1",
                (self.origin,),
            ).fetchone()
            assert head is not None
            found = (0, GENESIS) if last is None else (int(last[0]), str(last[1]))
            if (int(head[0]), str(head[1])) != found:
                raise integrity.damaged(
                    Damage(
                        f"origin {self.origin}'s recorded head is event {head[0]}, its last "
                        f"row is event {found[0]}: rows were added or removed outside tsuku",
                        min(int(head[0]), found[0]) + 1,
                    ),
                    db=self._label,
                    checkpoint=self.checkpoint_path,
                )
            self.last_id, self.last_hash = found
            loss = self._hold_to_checkpoint(conn, accept)
            with conn.transaction():
                folded = rollups.pg_catch_up(Qmark(conn))
        except (psycopg.OperationalError, psycopg.InterfaceError) as e:
            conn.close()
            raise unreachable(e) from None
        except psycopg.Error as e:
            conn.close()
            # Reached, and refused (rights, a schema not ours): not a network problem.
            why = first_line(e)
            raise LedgerUnavailable(
                f"the shared ledger refused this daemon: {why}",
                hint="Check the role in ledger.url and its rights on schema tsuku "
                "(docs/design/scale.md, operating notes).",
                cause=why,
            ) from None
        except BaseException:
            conn.close()
            raise
        self._writer = conn
        self.durable_id, self.durable_hash = self.last_id, self.last_hash
        log.get().info(
            "ledger.shared_opened", origin=self.origin, last_id=self.last_id, db=self.location
        )
        if folded:
            log.get().info("ledger.rollups_caught_up", events=folded, last_id=self.last_id)
        if loss is not None:
            self._adopt(loss, 0)

    def _hold_to_checkpoint(
        self, conn: psycopg.Connection[Any], accept: bool
    ) -> LedgerCorrupt | None:
        """This origin's chain against the checkpoint file; the loss a person accepted
        (``accept``), or None when nothing is wrong."""

        def check() -> Anchor | None:
            anchor = integrity.read_checkpoint(self.checkpoint_path)
            if anchor is None:
                return None
            row = conn.execute(
                "SELECT hash FROM tsuku.events WHERE origin = %s AND seq = %s",
                (self.origin, anchor.id),
            ).fetchone()
            damage = anchor_damage(anchor, self.last_id, None if row is None else str(row[0]))
            if damage is not None:
                raise integrity.damaged(damage, db=self._label, checkpoint=self.checkpoint_path)
            return anchor

        _, loss = integrity.held_to_checkpoint(
            check,
            ledger=str(self._label),
            checkpoint=self.checkpoint_path,
            last_id=self.last_id,
            accept=accept,
        )
        return loss

    def close_connection(self) -> None:
        self.readers.close()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    # ---- writing ---------------------------------------------------------------------

    def _write(self, rows: list[Row], counts: list[rollups.Counted]) -> str | None:
        """Commit ``rows`` whole under this origin's head (locked for the transaction),
        with the summary rollups they add up to, then move the checkpoint. Rows a lost
        answer already committed (with their sums) are not written again."""
        # Added up before the transaction: the head is held for database work only.
        sums = rollups.add_up(counts, [row[3] for row in rows])
        try:
            if self._writer is None or self._writer.closed or self._writer.broken:
                self._writer = _connect(self.url)
            conn = self._writer
            with conn.transaction():
                head = conn.execute(
                    "SELECT head_seq, head_hash FROM tsuku.origins WHERE origin = %s FOR UPDATE",
                    (self.origin,),
                ).fetchone()
                pending = self._unwritten(rows, head)
                if pending:
                    if self._row_security:
                        conn.cursor().executemany(_INSERT, [(self.origin, *r) for r in pending])
                    else:
                        with conn.cursor().copy(_COPY) as copy:
                            for r in pending:
                                copy.write_row((self.origin, *r))
                    if len(pending) < len(rows):  # the rest were counted with their commit
                        done = len(rows) - len(pending)
                        sums = rollups.add_up(counts[done:], [row[3] for row in pending])
                    after, through = pending[0][0] - 1, pending[-1][0]
                    if not rollups.pg_add(Qmark(conn), self.origin, after, through, sums):
                        # They do not count this origin up to here: folded between
                        # batches instead (``_rebuild_rollups``), summaries raw meanwhile.
                        log.get().warning("ledger.rollups_behind", origin=self.origin)
                        self.rollups_stale = True
                    conn.execute(
                        "UPDATE tsuku.origins SET head_seq = %s, head_hash = %s WHERE origin = %s",
                        (rows[-1][0], rows[-1][5], self.origin),
                    )
        except (psycopg.OperationalError, psycopg.InterfaceError) as e:
            if self._writer is not None:
                with contextlib.suppress(psycopg.Error):
                    self._writer.close()
                self._writer = None
            raise unreachable(e) from None
        except psycopg.Error as e:
            raise LedgerCorrupt(
                f"events {rows[0][0]}-{rows[-1][0]} could not be written to the shared ledger: {e}",
                hint="The daemon log has the error; restart the daemon once it is fixed.",
            ) from None
        try:
            self._checkpoints.write(rows[-1][0], rows[-1][5])
        except OSError as e:
            return str(e)
        return None

    def _unwritten(self, rows: list[Row], head: Sequence[Any] | None) -> list[Row]:
        """The rows of the batch after the origin's head: all of them, or those after the
        part a commit whose answer was lost did write. Any other head is a chain changed
        under the running daemon."""
        prev = rows[0][0] - 1
        if head is not None:
            seq, h = int(head[0]), str(head[1])
            done = seq - prev
            if done == 0 and h == self.durable_hash:
                return rows
            if 0 < done <= len(rows) and rows[done - 1][5] == h:
                log.get().info("ledger.commit_recovered", origin=self.origin, through=seq)
                return rows[done:]
        anchor = Anchor(prev, self.durable_hash, "the daemon's last commit")
        found = 0 if head is None else int(head[0])
        damage = anchor_damage(anchor, found, None) or Damage(
            f"events after {prev} of origin {self.origin} were added by something other "
            "than this daemon (is another daemon using this home's origin?)",
            prev + 1,
        )
        raise integrity.damaged(damage, db=self._label, checkpoint=self.checkpoint_path)

    def _rebuild_rollups(self) -> None:
        """Fold what the rollups lag behind, every origin's (a batch found this one's
        behind), or rebuild them from the events (verify found them off), between
        batches on the writer's connection. A failure leaves them as they were, logged:
        summaries read the events until they count every origin again."""
        rebuild, self._rollups_disagree = self._rollups_disagree, False
        try:
            if self._writer is None or self._writer.closed or self._writer.broken:
                self._writer = _connect(self.url)
            with self._writer.transaction():
                folded = rollups.pg_catch_up(Qmark(self._writer), rebuild=rebuild)
        except (psycopg.Error, LedgerUnavailable) as e:
            log.get().error("ledger.rollups_not_rebuilt", error=str(e))
        else:
            if rebuild:
                log.get().warning("ledger.rollups_rebuilt", events=folded)
            else:
                log.get().info("ledger.rollups_caught_up", events=folded, last_id=self.durable_id)
        self.rollups_stale = False

    # ---- reading ---------------------------------------------------------------------

    def read_sync(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        conn = PgReadConnection(self.url, self.origin)
        try:
            return fn(cast(sqlite3.Connection, conn))
        finally:
            conn.close()

    async def verify(self, head: str | None = None) -> VerifyReport:
        """This origin's chain, held to this writer's last commit, the checkpoint and
        ``head``; ``ledger_corrupt`` saying what is wrong. The team's summary rollups are
        held to a fold of every origin's events up to its mark (one snapshot): rollups
        that do not add up are rebuilt by the writer (``rollups_stale`` until then)."""
        anchors = [Anchor(self.durable_id, self.durable_hash, "the daemon's last commit")]

        def work(conn: sqlite3.Connection) -> tuple[VerifyReport, bool]:
            checkpoint = integrity.read_checkpoint(self.checkpoint_path)
            if checkpoint is not None:
                anchors.append(checkpoint)
            report = verify_chain(conn, anchors, head)
            return report, report.damage is not None or rollups.pg_agree(conn)

        report, agree = await self.read(work, heavy=True)
        if not agree:
            self._rollups_disagree = True
            self._rollups_off()
        if report.damage is not None:
            raise integrity.damaged(
                report.damage,
                db=self._label,
                checkpoint=self.checkpoint_path,
                checked=report.checked,
            )
        return report

    async def verify_origins(self) -> list[tuple[str, VerifyReport]]:
        """Every origin's chain, each held to the head the database records for it."""

        def work(conn: sqlite3.Connection) -> list[tuple[str, VerifyReport]]:
            found = []
            origins = conn.execute(
                "SELECT origin, head_seq, head_hash FROM tsuku.origins ORDER BY origin"
            ).fetchall()
            for origin, seq, h in origins:
                anchor = Anchor(int(seq), str(h), f"the head recorded for origin {origin}")
                rows = iter_rows(
                    conn,
                    "SELECT seq, ts, type, session, payload, hash FROM tsuku.events"
                    " WHERE origin = ? ORDER BY seq",
                    (origin,),
                    chunk=5000,
                )
                found.append((str(origin), check_chain(rows, [anchor])))
            return found

        return await self.read(work, heavy=True)

    # ---- the team, for status ----------------------------------------------------------

    async def refresh_team(self) -> None:
        """Every origin's chain length and role, for ``status`` (which must answer at
        once: given up after a second, or when out of reach; the last ones read stay)."""

        def work(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = conn.execute(
                "SELECT origin, head_seq, role FROM tsuku.origins ORDER BY origin"
            ).fetchall()
            return [{"origin": str(o), "events": int(n), "role": str(r)} for o, n, r in rows]

        with trio.move_on_after(TEAM_GLANCE_S):
            with contextlib.suppress(LedgerUnavailable):
                self.team = await self.read(work)

    # ---- anchors (events/anchors.py) -------------------------------------------------

    async def record_anchor(self) -> None:
        """Write every origin's head, as one statement (one snapshot) reads them, into
        this daemon's chain as a ``ledger.anchor`` event."""

        def heads(conn: sqlite3.Connection) -> list[Any]:
            return conn.execute(
                "SELECT origin, head_seq, head_hash FROM tsuku.origins WHERE head_seq > 0"
            ).fetchall()

        payload = anchors.heads_payload(await self.read(heads))
        await self.append(anchors.EVENT_TYPE, payload)

    async def verify_anchors(self) -> int:
        """Hold every chain to every head any anchor recorded; the number of anchored
        heads checked. ``ledger_corrupt`` naming the origin and seq that is gone or
        rewritten, and the anchor that recorded it."""

        def work(conn: sqlite3.Connection) -> tuple[int, anchors.AnchorDamage | None]:
            rows = conn.execute(_ANCHORED_HEADS).fetchall()
            found = [anchors.AnchoredHead(*r) for r in rows]
            return len(found), anchors.check(found)

        checked, bad = await self.read(work, heavy=True)
        if bad is not None:
            raise LedgerCorrupt(
                f"origin {bad.origin}'s chain no longer reaches event {bad.head.seq} that "
                f"an anchor recorded: {bad.damage.reason}",
                hint="Rows of that daemon were removed or rewritten in the database after "
                "the anchor saw them; restore it from a backup, or ask that daemon's owner "
                "(its own `events verify` checks its checkpoint too).",
                origin=bad.origin,
                first_bad_id=bad.damage.first_bad_id,
                anchor=f"{bad.head.by_origin}#{bad.head.by_seq}",
            )
        return checked


# Every head every anchor recorded, with the row now at that (origin, seq) and that
# origin's newest row: one statement, so one snapshot of the ledger.
_ANCHORED_HEADS = """
SELECT a.origin, a.seq, h.origin, h.seq, h.hash, e.hash,
       coalesce((SELECT max(m.seq) FROM tsuku.events m WHERE m.origin = h.origin), 0)
  FROM tsuku.events a
 CROSS JOIN LATERAL jsonb_to_recordset(a.payload::jsonb -> 'heads')
       AS h(origin text, seq bigint, hash text)
  LEFT JOIN tsuku.events e ON e.origin = h.origin AND e.seq = h.seq
 WHERE a.type = 'ledger.anchor'
 ORDER BY a.gid, h.origin
"""
