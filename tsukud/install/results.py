"""What the installer's requests answer, as typed values.

The RPC layer sends them as they are (the frame encoder turns a Struct into the same
JSON object a dict would be: every field, in order), so a handler is one call and the
wire shape is written down here once (schema/rpc.md, "Install").
"""

from __future__ import annotations

import msgspec


class Removed(msgspec.Struct, frozen=True, kw_only=True):
    """``tools.remove``: what went, and the dependencies nothing needs now (named, not
    removed: the user may use them directly)."""

    tool: str
    version: str | None
    removed_links: list[str]
    install_dir: str
    session: str
    unneeded_dependencies: list[str]


class Verified(msgspec.Struct, frozen=True, kw_only=True):
    """``tools.verify`` that passed (a failure is ``verify_failed``, with its problems)."""

    tool: str
    version: str | None
    ok: bool
    binaries: list[str]
    output: str | None
    session: str
