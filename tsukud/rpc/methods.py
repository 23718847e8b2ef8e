"""One function per RPC method (schema/rpc.md documents each).

Handlers take the services (the daemon's own methods: its ``DaemonControl``), their
validated params Struct and the ``Call``; they return a JSON-able result or raise a
``TsukuError``.
"""

from __future__ import annotations

import contextlib
import operator
import os
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
from msgspec import UNSET, UnsetType

from tsukud import config as configmod
from tsukud.errors import FrameTooLarge, InvalidParams, LedgerCorrupt, NotFound, SummaryTooSlow
from tsukud.events import queries, summary
from tsukud.events.readers import ReadTooSlow
from tsukud.events.store import EventStore, NewEvent
from tsukud.rpc import protocol
from tsukud.rpc.control import DaemonControl, DaemonStatus
from tsukud.rpc.registry import NoParams, method
from tsukud.rpc.server import Call
from tsukud.services import Services

if TYPE_CHECKING:
    from tsukud.policy.budget import Grant

# Event types a client may append. Everything else is written by the daemon itself:
# a client must not be able to forge an llm.turn or a budget.settled.
CLIENT_EVENT_PREFIX = "client."
MAX_APPEND_BATCH = 10_000
HEX_DIGITS = "0123456789abcdef"
# A listing up to this many events is a quick read; longer ones (or all: limit 0) take
# the heavy lane of the read pool, as summaries and verification do.
QUICK_LIST_LIMIT = 1000
# What a quick listing may hold in memory before it is streamed chunk by chunk instead.
QUICK_LIST_BYTES = 4 << 20


# ---- answers ----------------------------------------------------------------------------
# Each is sent as it is: the frame encoder writes the object (schema/rpc.md); a field
# left unset is not sent.


class Pong(msgspec.Struct, frozen=True):
    pong: bool
    pid: int


class Stopping(msgspec.Struct, frozen=True):
    stopping: bool
    pid: int


class CancelAsked(msgspec.Struct, frozen=True):
    cancelled: bool  # False: no such request was running on this connection


class Listed(msgspec.Struct, frozen=True):
    """``events.list``'s result (the events came as progress frames)."""

    count: int
    hint: str | UnsetType = UNSET  # nothing listed under a type no event has


class OriginChecked(msgspec.Struct, frozen=True):
    origin: str
    checked: int
    head: str | None


class AnchorsChecked(msgspec.Struct, frozen=True):
    checked: int


class ChainVerified(msgspec.Struct, frozen=True, kw_only=True):
    """``events.verify`` that passed (a damaged chain is ``ledger_corrupt``)."""

    ok: bool = True
    checked: int
    head: str | None
    origin: str | UnsetType = UNSET  # a shared ledger: this daemon's origin
    origins: list[OriginChecked] | UnsetType = UNSET
    anchors: AnchorsChecked | UnsetType = UNSET
    rollups: str  # ok | rebuilt
    head_id: int | UnsetType = UNSET


class Appended(msgspec.Struct, frozen=True, kw_only=True):
    first_id: int
    last_id: int
    durable: bool


class Settled(msgspec.Struct, frozen=True):
    settled: str  # the reservation


class Answered(msgspec.Struct, frozen=True):
    answered: bool


class SettingsShown(msgspec.Struct, frozen=True):
    """``config.list``: every setting with its source, and the file they are kept in."""

    settings: list[dict[str, Any]]
    path: str


# ---- daemon -----------------------------------------------------------------------------


@method("ping", NoParams, inline=True)
async def ping(s: Services, p: NoParams, call: Call) -> Pong:
    """Cheapest round trip: liveness and the daemon's pid."""
    return Pong(True, os.getpid())


@method("status", NoParams, inline=True, takes="control")
async def status(d: DaemonControl, p: NoParams, call: Call) -> DaemonStatus:
    """Version, uptime, budget, rate window, breakers, event count."""
    await d.refresh_shared()
    return d.status()


@method("daemon.stop", NoParams, inline=True, takes="control")
async def daemon_stop(d: DaemonControl, p: NoParams, call: Call) -> Stopping:
    """Answer, then stop: in-flight requests are cancelled, the ledger flushed."""
    call.after_reply.append(d.request_stop)  # so this answer is not itself cancelled
    return Stopping(True, os.getpid())


class CancelParams(msgspec.Struct, forbid_unknown_fields=True):
    id: protocol.RequestId


@method("cancel", CancelParams, inline=True)
async def cancel(s: Services, p: CancelParams, call: Call) -> CancelAsked:
    """Cancel a request still running on this connection; it ends with a ``cancelled``
    error saying what its runs spent."""
    return CancelAsked(call.conn.cancel(p.id))


# ---- events -----------------------------------------------------------------------------

# What the events of one events.list progress frame may take, leaving room for the rest.
LIST_FRAME_BYTES = protocol.MAX_FRAME - 1024


class ListParams(msgspec.Struct, forbid_unknown_fields=True):
    filter: queries.EventFilter = queries.EventFilter()
    limit: int = 100


@method("events.list", ListParams)
async def events_list(s: Services, p: ListParams, call: Call) -> Listed:
    """Stream matching events as progress frames of ``{"events": [...]}``; result is the count."""
    queries.check_times(p.filter)
    shared = s.store.origin is not None
    queries.list_sql(p.filter, p.limit, shared=shared)  # validate before going to a thread
    await s.store.caught_up()  # what was appended before this request is listed
    if 0 < p.limit <= QUICK_LIST_LIMIT:
        quick = await s.store.read(partial(_quick_list, p, call.id, shared=shared))
        if quick is not None:
            total, frames = quick
            if frames:
                await call.progress_encoded(frames)
            return _counted(total, p.filter)
    # Fetch in a worker thread, a chunk at a time, and forward each chunk: memory stays
    # flat however large the ledger is. The thread also encodes the chunk, so the event
    # loop (which answers `status`) only moves bytes.
    import trio

    send, recv = trio.open_memory_channel[tuple[int, msgspec.Raw]](4)
    total = 0

    def produce(conn: Any) -> None:
        try:
            chunks = queries.iter_list(
                conn, p.filter, p.limit, max_bytes=LIST_FRAME_BYTES, shared=shared
            )
            for rows in chunks:
                trio.from_thread.run(send.send, (len(rows), _events_chunk(rows)))
        finally:
            # The request may have been cancelled (client gone): nothing left to tell.
            with contextlib.suppress(trio.Cancelled, trio.RunFinishedError):
                trio.from_thread.run_sync(send.close)

    async with trio.open_nursery() as nursery:
        heavy = p.limit == 0 or p.limit > QUICK_LIST_LIMIT
        nursery.start_soon(partial(s.store.read, produce, heavy=heavy))
        async with recv:
            async for n, chunk in recv:
                total += n
                await call.progress(chunk)
    return _counted(total, p.filter)


def _counted(total: int, f: queries.EventFilter) -> Listed:
    """The listing's result; with nothing listed under a type filter that no event type
    can meet, a ``hint`` naming the nearest type (a mistyped ``--type``)."""
    hint = queries.types_hint(f.types) if total == 0 and f.types else None
    return Listed(total, hint) if hint else Listed(total)


def _quick_list(
    p: ListParams, rid: protocol.RequestId, conn: Any, *, shared: bool = False
) -> tuple[int, bytes] | None:
    """A short listing (the usual one) whole, in one trip to a worker thread that reads
    the rows and encodes the progress frames: the event loop takes a few steps for it,
    not a channel round trip per chunk. None when the frames outgrow
    :data:`QUICK_LIST_BYTES` (clients' large payloads): those are streamed instead."""
    if not shared:
        written = _quick_list_in_sql(p, rid, conn)
        if written is not None:
            return written
    total, size = 0, 0
    frames: list[bytes] = []
    for rows in queries.iter_list(
        conn, p.filter, p.limit, max_bytes=LIST_FRAME_BYTES, shared=shared
    ):
        body = msgspec.json.encode(protocol.progress_frame(rid, _events_chunk(rows)))
        if len(body) > protocol.MAX_FRAME:  # one event alone past the cap, as streamed
            raise FrameTooLarge(
                f"response of {len(body)} bytes exceeds the {protocol.MAX_FRAME}-byte frame cap",
                hint="The answer is too large for one frame; ask for less at a time.",
            )
        size += len(body)
        if size > QUICK_LIST_BYTES:
            return None
        frames += (protocol.HEADER.pack(len(body)), body)
        total += len(rows)
    return total, b"".join(frames)


def _quick_list_in_sql(
    p: ListParams, rid: protocol.RequestId, conn: Any
) -> tuple[int, bytes] | None:
    """A short listing's one progress frame with its events written by SQLite
    (``queries.list_json_sql``); None when they would not fit one frame (large
    payloads), which the chunking path then splits."""
    sql, params = queries.list_json_sql(p.filter, p.limit)
    total, joined = conn.execute(sql, params).fetchone()
    if not total:
        return 0, b""
    events = joined.encode()
    if len(events) > LIST_FRAME_BYTES:
        return None
    body = msgspec.json.encode(
        protocol.progress_frame(rid, msgspec.Raw(b'{"events":[' + events + b"]}"))
    )
    return int(total), protocol.HEADER.pack(len(body)) + body


class ListedEvent(msgspec.Struct, frozen=True, kw_only=True):
    """An event as ``events.list`` sends it, its payload the stored JSON as it is; a
    shared ledger's also names its origin and its place in that origin's chain."""

    id: int
    ts: str
    type: str
    session: str | None
    payload: msgspec.Raw
    hash: str
    origin: str | UnsetType = UNSET
    seq: int | UnsetType = UNSET


class _Listed(msgspec.Struct, frozen=True):
    events: list[ListedEvent]


def _events_chunk(rows: list[list[Any]]) -> msgspec.Raw:
    """One ``{"events": [...]}`` progress body, encoded (payloads are stored as JSON). A
    shared ledger's events also name their origin and their place in its chain."""
    shared = bool(rows) and len(rows[0]) > 6
    events = [
        ListedEvent(
            id=r[0],
            ts=r[1],
            type=r[2],
            session=r[3],
            payload=msgspec.Raw(r[4].encode()),
            hash=r[5],
            origin=r[6] if shared else UNSET,
            seq=r[7] if shared else UNSET,
        )
        for r in rows
    ]
    return msgspec.Raw(msgspec.json.encode(_Listed(events)))


class SummaryParams(msgspec.Struct, forbid_unknown_fields=True):
    filter: queries.EventFilter = queries.EventFilter()
    by: str = "day"
    # At most this many groups, those costing most; the others summed in ``rest``.
    top: Annotated[int, msgspec.Meta(ge=1, le=summary.MAX_GROUPS)] = summary.MAX_GROUPS


_SOURCES = {"raw": "read from the events", "rollups+raw": "rollups and part-hours of events"}


@method("events.summary", SummaryParams)
async def events_summary(s: Services, p: SummaryParams, call: Call) -> msgspec.Raw:
    """Counts, tokens and cost (the estimated part apart) per day, hour, provider, model,
    session or type; from the rollups where the filter allows (``events/summary.py``)."""
    queries.check_times(p.filter)
    shared = s.store.origin is not None
    queries.summary_sql(p.filter, p.by, shared=shared)  # validate before going to a thread
    await s.store.caught_up()  # what was appended before this request is counted
    # A summary holding its reader past the limit is interrupted (``readers.ReadPool``),
    # so it stops holding a reader and a CPU; waiting for a reader does not count.
    setting = float(s.config()["events.summary_timeout_seconds"])
    limit = setting if setting > 0 else None
    source = summary.plan(p.filter, p.by).source
    try:

        def summarise(conn: Any) -> msgspec.Raw:
            # Encoding in the thread too: thousands of groups (by session) would otherwise
            # hold the event loop for milliseconds. Shared: the whole team's (or one
            # origin's), from the team's rollups as on SQLite.
            answer = summary.summarise(conn, p.filter, p.by, p.top, shared=shared)
            return msgspec.Raw(msgspec.json.encode(answer))

        # From the rollups (with at most a part-hour of events at each end) it is a quick
        # read; a summary the rollups cannot answer scans events: heavy.
        return await s.store.read(summarise, heavy=source == "raw", limit=limit)
    except ReadTooSlow:
        raise SummaryTooSlow(
            f"the summary by {p.by} ({_SOURCES.get(source, source)}) did not finish within "
            f"{setting:g} s and was stopped",
            limit_s=setting,
            source=source,
        ) from None


class VerifyParams(msgspec.Struct, forbid_unknown_fields=True):
    # A head hash the user noted or exported (at least its first 16 hex digits).
    head: str | None = None
    # A shared ledger: every origin's chain (and the anchors), not only this daemon's.
    all_origins: bool = False
    # A shared ledger: every chain still passes through every head an anchor recorded.
    anchors: bool = False


@method("events.verify", VerifyParams)
async def events_verify(s: Services, p: VerifyParams, call: Call) -> ChainVerified:
    """Recompute the hash chain and hold it to the checkpoint (and ``head``); error
    ``ledger_corrupt`` names the first bad event and what was lost."""
    head = None if p.head is None else p.head.strip().lower()
    if head is not None and (len(head) < 16 or len(head) > 64 or head.strip(HEX_DIGITS)):
        raise InvalidParams(
            "head must be 16 to 64 hex digits", hint="Give the head `events verify` printed."
        )
    report = await s.store.verify(head)
    origin = s.store.origin
    return ChainVerified(
        checked=report.checked,
        head=report.head,
        origin=UNSET if origin is None else origin,
        origins=await _verify_origins(s.store) if p.all_origins else UNSET,
        anchors=AnchorsChecked(await _verify_anchors(s.store))
        if p.anchors or p.all_origins
        else UNSET,
        # Summary rollups that did not add up to the events are being rebuilt from them.
        rollups="rebuilt" if s.store.rollups_stale else "ok",
        head_id=UNSET if report.head_id is None else report.head_id,
    )


async def _verify_origins(store: EventStore) -> list[OriginChecked]:
    """Every origin's chain in a shared ledger (SQLite: the one chain, already checked)."""
    if store.origin is None:
        return []
    from tsukud.events.pg_store import PgEventStore

    assert isinstance(store, PgEventStore)
    found = await store.verify_origins()
    for origin, report in found:
        if report.damage is not None:
            raise LedgerCorrupt(
                f"origin {origin}'s chain in the shared ledger is damaged: {report.damage.reason}",
                hint="Rows of that daemon were edited or removed in the database; restore "
                "it from a backup, or ask that daemon's owner (its own `events verify` "
                "names the first bad event).",
                first_bad_id=report.damage.first_bad_id,
                checked=report.checked,
            )
    return [OriginChecked(o, r.checked, r.head) for o, r in found]


async def _verify_anchors(store: EventStore) -> int:
    """How many anchored heads the chains still pass through (SQLite: none; its one
    chain is held to its checkpoint)."""
    if store.origin is None:
        return 0
    from tsukud.events.pg_store import PgEventStore

    assert isinstance(store, PgEventStore)
    return await store.verify_anchors()


_TYPE_OF = operator.attrgetter("type")


class AppendParams(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    events: list[NewEvent]
    durable: bool = True


@method("events.append", AppendParams)
async def events_append(s: Services, p: AppendParams, call: Call) -> Appended:
    """Append client annotations (``client.*`` types only); answered once durable."""
    if not p.events:
        raise InvalidParams("events must not be empty")
    if len(p.events) > MAX_APPEND_BATCH:
        raise InvalidParams(f"at most {MAX_APPEND_BATCH} events per call")
    if not all(t.startswith(CLIENT_EVENT_PREFIX) for t in set(map(_TYPE_OF, p.events))):
        for i, e in enumerate(p.events):  # the first one, named by its index
            if not e.type.startswith(CLIENT_EVENT_PREFIX):
                raise InvalidParams(
                    f"events[{i}].type: event type {e.type!r} is reserved for the daemon",
                    hint=f"Clients may append {CLIENT_EVENT_PREFIX}* events only.",
                )
    # Sequenced whole: an invalid event refuses the call before any id is handed out.
    first, last = s.store.append_many(p.events)
    if p.durable:
        await s.store.wait_durable(last)
    return Appended(first_id=first, last_id=last, durable=p.durable)


# ---- policy (used by the pipelines in-process; exposed for tools and tests) -------------


# Money over the wire: bounded so micro-dollar arithmetic stays exact (see to_micro).
Usd = Annotated[float, msgspec.Meta(ge=0, le=configmod.MAX_NUMBER)]


class ReserveParams(msgspec.Struct, forbid_unknown_fields=True):
    amount_usd: Usd
    purpose: str = "rpc"
    session: str | None = None
    confirmed: bool = False


@method("budget.reserve", ReserveParams)
async def budget_reserve(s: Services, p: ReserveParams, call: Call) -> Grant:
    """Reserve a worst-case cost against today's budget (refused past it); the grant is
    sent as it is (reservation, amount_usd, day, remaining_usd)."""
    return await s.budget.reserve(
        p.amount_usd, session=p.session, purpose=p.purpose, confirmed=p.confirmed
    )


class SettleParams(msgspec.Struct, forbid_unknown_fields=True):
    reservation: str
    actual_usd: Usd
    session: str | None = None


@method("budget.settle", SettleParams)
async def budget_settle(s: Services, p: SettleParams, call: Call) -> Settled:
    """Settle a reservation at the actual cost."""
    await s.budget.settle(p.reservation, p.actual_usd, session=p.session)
    return Settled(p.reservation)


# ---- confirmations ----------------------------------------------------------------------


class AnswerParams(msgspec.Struct, forbid_unknown_fields=True):
    token: str
    yes: bool
    choice: int | None = None  # a question with a ``choose`` list: the number picked


@method("confirm.answer", AnswerParams, inline=True)
async def confirm_answer(s: Services, p: AnswerParams, call: Call) -> Answered:
    """The user's answer to a ``confirm`` progress frame (sent on the same connection)."""
    if not s.confirmations.answer(p.token, p.yes, p.choice):
        raise NotFound(f"no pending question {p.token!r}")
    return Answered(True)


# ---- configuration ----------------------------------------------------------------------


class ConfigGetParams(msgspec.Struct, forbid_unknown_fields=True):
    key: str


@method("config.get", ConfigGetParams, inline=True, takes="control")
async def config_get(d: DaemonControl, p: ConfigGetParams, call: Call) -> dict[str, Any]:
    """One setting with its source; secrets only as (set)/(not set)."""
    return d.config.setting(configmod.key(p.key).name).shown()


@method("config.list", NoParams, inline=True, takes="control")
async def config_list(d: DaemonControl, p: NoParams, call: Call) -> SettingsShown:
    """Every setting with its source; secrets only as (set)/(not set)."""
    return SettingsShown([s.shown() for s in d.config.settings()], str(d.config.path))


class ConfigSetParams(msgspec.Struct, forbid_unknown_fields=True):
    key: str
    value: Any = None  # None unsets the key in the file


@method("config.set", ConfigSetParams, inline=True, takes="control")
async def config_set(d: DaemonControl, p: ConfigSetParams, call: Call) -> dict[str, Any]:
    """Write one setting to config.toml (0600, atomic) and apply it."""
    k = configmod.key(p.key)
    configmod.write_value(d.config.path, k.name, p.value)
    d.refresh_config()  # records config.changed
    s = d.config.setting(k.name)
    out = s.shown()
    if s.source.startswith("env:"):
        out["note"] = f"${s.source[4:]} overrides the file value while it is set"
    return out
