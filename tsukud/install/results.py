"""What the installer's requests answer, as typed values.

The RPC layer sends them as they are (the frame encoder turns a Struct into the same
JSON object a dict would be: every field, in order), so a handler is one call and the
wire shape is written down here once (schema/rpc.md, "Install").
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType


class RemovedToolchain(msgspec.Struct, frozen=True, kw_only=True):
    """A hidden toolchain a ``remove`` took with it: installed for ``toolchain_for``
    (the tool removed, or a toolchain removed with it), used by no installed tool now."""

    tool: str
    version: str | None
    toolchain_for: str
    install_dir: str


class Removed(msgspec.Struct, frozen=True, kw_only=True):
    """``tools.remove``: what went, the hidden toolchains that went with it
    (``also_removed``: installed for it, used by nothing now: ``hidden.py``), and the
    dependencies nothing needs now (named, not removed: the user may use them
    directly)."""

    tool: str
    version: str | None
    removed_links: list[str]
    install_dir: str
    session: str
    unneeded_dependencies: list[str]
    also_removed: list[RemovedToolchain] = []


class UnusedToolchain(msgspec.Struct, frozen=True, kw_only=True):
    """A hidden toolchain ``remove --unused`` removed: used by no installed tool (its
    tool's install failed after it, or an upgrade stopped using it)."""

    tool: str
    version: str | None
    install_dir: str


class UnusedRemoved(msgspec.Struct, frozen=True, kw_only=True):
    """``tools.remove_unused``: of the toolchains named (those the person was shown),
    what went, in one session, and what stayed (``kept``: no longer hidden and unused
    when its turn came: asked for by name, used by an install since, or gone)."""

    session: str
    removed: list[UnusedToolchain]
    kept: list[str]


class Verified(msgspec.Struct, frozen=True, kw_only=True):
    """``tools.verify`` that passed (a failure is ``verify_failed``, with its problems)."""

    tool: str
    version: str | None
    ok: bool
    binaries: list[str]
    output: str | None
    session: str


class Installed(msgspec.Struct, frozen=True, kw_only=True):
    """``install`` of a tool with a recipe. Already installed at that version, it is
    the short answer (``already_installed``, where, which binaries): the fields only a
    fresh install has are left unset, and an unset field is not sent at all."""

    tool: str
    version: str
    tag: str | UnsetType | None = UNSET
    already_installed: bool
    install_dir: str
    binaries: list[str]
    links: list[str] | UnsetType = UNSET  # bin/ links, one per binary
    assets: list[dict[str, Any]] | UnsetType = UNSET  # what was downloaded and checked
    verify_output: str | UnsetType | None = UNSET
    replaced: str | UnsetType | None = UNSET  # the version this one replaced
    relocation: dict[str, Any] | UnsetType | None = UNSET  # a bottle's relocation
    build: dict[str, Any] | UnsetType | None = UNSET  # built from source: image, deps
    removed_strays: list[str] | UnsetType = UNSET  # what install scripts left in bin/
    session: str | UnsetType = UNSET
    timings_ms: dict[str, float] | UnsetType = UNSET  # per install stage


class ToolInfo(msgspec.Struct, frozen=True, kw_only=True):
    """``tools.info``: the installed record and what the recipe says. A recipe that
    cannot be read leaves only ``recipe_error`` beside the record; one that has no
    steps for this platform says why (``unsupported_reason``) instead of ``steps``."""

    tool: str
    installed: dict[str, Any] | None  # the ledger's record, None when not installed
    recipe_error: str | UnsetType = UNSET
    name: str | UnsetType = UNSET
    description: str | UnsetType | None = UNSET
    homepage: str | UnsetType | None = UNSET
    recipe_source: str | UnsetType = UNSET
    recipe_path: str | UnsetType = UNSET
    recipe_sha256: str | UnsetType = UNSET
    recipe_stale: bool | UnsetType = UNSET
    platform: str | UnsetType = UNSET
    supported: bool | UnsetType = UNSET
    steps: list[dict[str, Any]] | UnsetType = UNSET
    unsupported_reason: str | UnsetType = UNSET
    verify: VerifyCommand | UnsetType = UNSET


class VerifyCommand(msgspec.Struct, frozen=True, kw_only=True):
    command: str
    pattern: str | None


class Upgraded(msgspec.Struct, frozen=True, kw_only=True):
    tool: str
    from_: str = msgspec.field(name="from")  # the version it replaced
    to: str
    session: str | None


class Current(msgspec.Struct, frozen=True, kw_only=True):
    """Already the newest release (or pinned to the one it has, or a hidden toolchain
    ``upgrade --all`` keeps for the tools that run on it)."""

    tool: str
    version: str
    pinned: bool | UnsetType = UNSET  # sent only when it is
    # The tools a hidden toolchain is kept at ``version`` for (sent only then): its newer
    # release would delete the one they run on (``hidden.refuse_replacing``).
    kept_for: list[str] | UnsetType = UNSET


class NotUpgraded(msgspec.Struct, frozen=True, kw_only=True):
    tool: str
    error_code: str | None
    message: str | None
    hint: str | UnsetType = UNSET


class Upgrades(msgspec.Struct, frozen=True, kw_only=True):
    """``tools.upgrade``: each tool named (or installed) in one of three lists."""

    upgraded: list[Upgraded]
    current: list[Current]
    failed: list[NotUpgraded]


class RegistryUpdated(msgspec.Struct, frozen=True, kw_only=True):
    """``registry.update``: the manifest read again and every cached recipe refetched:
    refreshed, removed (the registry no longer has it) or failed (why, by name)."""

    manifest_url: str
    registry_url: str
    recipes_listed: int
    generated_at: str | None
    refreshed: list[str]
    removed: list[str]
    failed: dict[str, str]
