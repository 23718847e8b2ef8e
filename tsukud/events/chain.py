"""The hash chain that makes the ledger tamper-evident.

Pure functions, shared by the writer (which extends the chain) and ``events verify``
(which recomputes it), so the two cannot drift apart.
"""

from __future__ import annotations

import hashlib

GENESIS = "0" * 64


def chain_line(id_: int, ts: str, type_: str, session: str | None, payload: str) -> bytes:
    # Unit separators cannot occur in ids/timestamps/types and are escaped in JSON,
    # so distinct rows never serialise to the same line.
    return f"{id_}\x1f{ts}\x1f{type_}\x1f{session or ''}\x1f{payload}".encode()


def link(prev_hash: str, id_: int, ts: str, type_: str, session: str | None, payload: str) -> str:
    h = hashlib.sha256(prev_hash.encode("ascii"))
    h.update(chain_line(id_, ts, type_, session, payload))
    return h.hexdigest()
