"""The hash chain that makes the ledger tamper-evident.

Pure functions, shared by the writer (which extends the chain), the start-up check and
``events verify`` (which recompute it), so they cannot drift apart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

GENESIS = "0" * 64


def chain_line(id_: int, ts: str, type_: str, session: str | None, payload: str) -> bytes:
    # Unit separators cannot occur in ids/timestamps/types and are escaped in JSON,
    # so distinct rows never serialise to the same line.
    return _line_head(id_, ts, type_, session) + payload.encode()


def _line_head(id_: int, ts: str, type_: str, session: str | None) -> bytes:
    return f"{id_}\x1f{ts}\x1f{type_}\x1f{session or ''}\x1f".encode()


def link(prev_hash: str, id_: int, ts: str, type_: str, session: str | None, payload: str) -> str:
    return link_encoded(prev_hash, id_, ts, type_, session, payload.encode())


def link_encoded(
    prev_hash: str, id_: int, ts: str, type_: str, session: str | None, payload: bytes
) -> str:
    """``link`` over a payload already encoded as UTF-8 JSON (the writer's: every
    appended payload is encoded once, and hashed and stored as those bytes)."""
    h = hashlib.sha256(prev_hash.encode("ascii"))
    h.update(_line_head(id_, ts, type_, session))
    h.update(payload)
    return h.hexdigest()


def link_many(
    prev_hash: str,
    first_id: int,
    ts: str,
    types: Sequence[str],
    sessions: Sequence[str | None],
    payloads: Sequence[bytes],
) -> list[str]:
    """``link_encoded`` over a batch of consecutive ids sharing ``ts`` (``append_many``'s),
    each row's hash chained to the one before: the same hashes, with each row's line
    built from parts made once per type and session, and every line formatted before
    the loop, which then only hashes (the chain is sequential; the lines are not)."""
    heads = {
        (type_, session): _line_head(0, ts, type_, session)[1:]
        for type_, session in set(zip(types, sessions, strict=True))
    }
    tails = map(heads.__getitem__, zip(types, sessions, strict=True))
    ids = range(first_id, first_id + len(payloads))
    lines = list(map(b"%d%s%s".__mod__, zip(ids, tails, payloads, strict=True)))
    sha256 = hashlib.sha256
    prev = prev_hash.encode("ascii")
    hashes = []
    for line in lines:
        h = sha256(prev + line).hexdigest()
        hashes.append(h)
        prev = h.encode("ascii")
    return hashes


# ---- verification ----------------------------------------------------------------------
#
# The chain alone proves that the rows present were not edited or reordered. It cannot
# show that the newest rows are gone (a shorter chain is still a valid chain), nor that
# the whole chain was recomputed after an edit (the hash is keyless). Anchors close part
# of that gap: a (last id, head hash) noted somewhere else (the checkpoint file the
# writer keeps, a head the user exported) must still be in the chain, at that id.


@dataclass(frozen=True)
class Anchor:
    """A point the chain must pass through, and who vouches for it."""

    id: int
    hash: str
    source: str  # e.g. "the checkpoint", for messages


@dataclass(frozen=True)
class Damage:
    """What is wrong with a ledger, in terms a person can act on."""

    reason: str
    first_bad_id: int
    lost: tuple[int, int] | None = None  # ids known to be missing (first, last)
    head_not_found: bool = False  # the head the user gave is not in the chain

    @property
    def lost_count(self) -> int:
        return 0 if self.lost is None else self.lost[1] - self.lost[0] + 1


@dataclass(frozen=True)
class VerifyReport:
    checked: int
    head: str = GENESIS  # hash of the last row checked
    damage: Damage | None = None
    head_id: int | None = None  # where the head the user gave was found

    @property
    def ok(self) -> bool:
        return self.damage is None

    @property
    def first_bad_id(self) -> int | None:
        return None if self.damage is None else self.damage.first_bad_id

    @property
    def reason(self) -> str:
        return "" if self.damage is None else self.damage.reason


def anchor_damage(anchor: Anchor, last_id: int, hash_at_anchor: str | None) -> Damage | None:
    """Compare an anchor with a chain whose last id is ``last_id`` and whose row at
    ``anchor.id`` has ``hash_at_anchor`` (None: no such row)."""
    if anchor.id == 0:
        return None  # an anchor taken on an empty ledger vouches for nothing
    if anchor.id > last_id:
        n = anchor.id - last_id
        return Damage(
            f"events {last_id + 1}-{anchor.id} are missing ({n} event{'s' if n != 1 else ''}):"
            f" {anchor.source} records event {anchor.id}, the ledger ends at {last_id}",
            last_id + 1,
            (last_id + 1, anchor.id),
        )
    if hash_at_anchor != anchor.hash:
        return Damage(
            f"event {anchor.id} is not the one {anchor.source} records: the ledger was"
            f" rewritten at or before event {anchor.id}",
            anchor.id,
        )
    return None


ChainRow = tuple[int, str, str, str | None, str, str]


def check_chain(
    batches: Iterable[Iterable[ChainRow]],
    anchors: Sequence[Anchor] = (),
    head: str | None = None,
) -> VerifyReport:
    """Recompute every hash (rows in id order, in batches) and hold the chain to the
    anchors; ``head`` is a hash (or a prefix of one) the chain must contain."""
    at = {a.id: a for a in anchors}
    prev = GENESIS
    expected = 1
    head_id: int | None = None
    for rows in batches:
        for id_, ts, type_, session, payload, h in rows:
            if id_ != expected:
                return VerifyReport(
                    expected - 1,
                    prev,
                    Damage(f"event {expected} is missing (next is {id_})", expected),
                )
            if link(prev, id_, ts, type_, session, payload) != h:
                return VerifyReport(
                    expected - 1, prev, Damage(f"event {id_} does not match its hash", id_)
                )
            anchor = at.get(id_)
            if anchor is not None and (damage := anchor_damage(anchor, id_, h)) is not None:
                return VerifyReport(expected - 1, prev, damage)
            if head is not None and head_id is None and h.startswith(head):
                head_id = id_
            prev = h
            expected += 1
    last = expected - 1
    for anchor in anchors:
        if anchor.id > last and (damage := anchor_damage(anchor, last, None)) is not None:
            return VerifyReport(last, prev, damage)
    if head is not None and head_id is None:
        return VerifyReport(
            last,
            prev,
            Damage(
                f"the head you gave ({head[:16]}…) is not in the ledger: events were removed"
                " or the chain was rewritten since it was noted",
                1,
                head_not_found=True,
            ),
        )
    return VerifyReport(last, prev, head_id=head_id)
