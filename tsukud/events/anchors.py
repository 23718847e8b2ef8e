"""Anchors: what ties a shared ledger's chains together (pure).

Each origin's chain proves its rows were not edited, but not that its newest rows are
still there: a chain cut short is still a valid chain, and the head the database records
for it (``tsuku.origins``) moves with whoever can write the table. An anchor is every
origin's head as one daemon read it in one snapshot, written as a ``ledger.anchor`` event
into that daemon's *own* chain (so the anchors are chained and checked too). Removing or
rewriting another origin's rows below a head some anchor recorded then shows: the row at
the anchored seq is gone or has another hash. ``events verify --anchors`` holds every
chain to every anchor; the shell (``pg_store``) reads the anchors and what the ledger has
at each anchored head in one statement and these functions judge it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tsukud.events.chain import Anchor, Damage, anchor_damage

EVENT_TYPE = "ledger.anchor"


def heads_payload(heads: Iterable[Sequence[Any]]) -> dict[str, Any]:
    """The ``ledger.anchor`` payload for ``(origin, head_seq, head_hash)`` rows read in
    one snapshot; a chain with no events yet vouches for nothing and is left out."""
    return {
        "heads": [
            {"origin": str(o), "seq": int(s), "hash": str(h)}
            for o, s, h in sorted(heads, key=lambda r: str(r[0]))
            if int(s) > 0
        ]
    }


@dataclass(frozen=True)
class AnchoredHead:
    """One head an anchor recorded, beside what the ledger holds for it now."""

    by_origin: str  # the daemon whose chain holds the anchor
    by_seq: int  # the anchor's place in that chain
    origin: str  # the chain it vouches for
    seq: int
    hash: str
    found_hash: str | None  # the hash of that origin's row at ``seq`` now (None: no row)
    last_seq: int  # that origin's newest row now (0: none)


@dataclass(frozen=True)
class AnchorDamage:
    """An anchored head a chain no longer passes through."""

    origin: str  # the damaged chain
    damage: Damage
    head: AnchoredHead


def check(heads: Iterable[AnchoredHead]) -> AnchorDamage | None:
    """The first anchored head that a chain no longer has, or has with another hash."""
    for h in heads:
        source = f"the anchor in origin {h.by_origin}'s event {h.by_seq}"
        damage = anchor_damage(Anchor(h.seq, h.hash, source), h.last_seq, h.found_hash)
        if damage is not None:
            return AnchorDamage(h.origin, damage, h)
    return None
