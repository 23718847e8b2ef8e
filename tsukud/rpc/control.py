"""What the daemon's own RPC methods see of the daemon: its state and its controls.

Feature methods receive :class:`~tsukud.services.Services`; the few methods about the
daemon itself (``status``, ``daemon.stop``, ``config.*``) receive this narrower face
instead of the ``Daemon`` class, so no methods module depends on the daemon's
lifecycle code (``tests/unit/rpc/test_handlers_take_services.py`` holds them to it).
``tsukud.daemon.Daemon`` is the one implementation (``Daemon.control``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import msgspec
from msgspec import UNSET, UnsetType

from tsukud.policy.breaker import BreakerShown
from tsukud.policy.budget import BudgetShown
from tsukud.policy.ratelimit import HourShown

if TYPE_CHECKING:
    from tsukud.config import Config


class LedgerShown(msgspec.Struct, frozen=True, kw_only=True):
    """``status``'s ``events``: how far the ledger is written and made durable, which
    backend holds it and whether it can be reached; on a shared ledger this daemon's
    chain (``origin``) and every daemon's (``origins``, sent only there)."""

    count: int
    durable: int
    disk_full: bool
    ledger: str  # sqlite or postgresql
    unreachable: str | None
    origin: str | None
    origins: list[dict[str, Any]] | UnsetType = UNSET


class SlotsShown(msgspec.Struct, frozen=True, kw_only=True):
    """``status``'s ``sandbox``: the validation container slots, and how many are taken."""

    slots: int
    busy: int


class SettingShown(msgspec.Struct, frozen=True, kw_only=True):
    """A setting in force and where its value came from; a secret's value is never
    shown, only whether it is set."""

    key: str
    value: Any
    set: bool
    secret: bool
    source: str


class ProblemShown(msgspec.Struct, frozen=True, kw_only=True):
    """A problem of the config file: status still answers and says what to do."""

    message: str
    hint: str | None


class DaemonStatus(msgspec.Struct, frozen=True, kw_only=True):
    """``status`` (schema/rpc.md): answered from memory, the request a busy daemon must
    answer at once."""

    version: str
    pid: int
    uptime_s: float
    started_at: float
    socket: str | None
    activation: str
    home: str
    database: str
    budget: BudgetShown
    generations: HourShown
    breakers: list[BreakerShown]
    events: LedgerShown
    sandbox: SlotsShown
    connections: int
    settings: list[SettingShown]
    problems: list[ProblemShown]


class DaemonControl(Protocol):
    @property
    def config(self) -> Config:
        """The daemon's own settings (its file and environment, no caller's on top)."""

    def refresh_config(self) -> None:
        """Pick up an edit of the settings file and record what changed."""

    async def refresh_shared(self) -> None:
        """Before ``status``: the numbers every daemon on a shared ledger sees."""

    def status(self) -> DaemonStatus:
        """The daemon's state as ``status`` answers it (schema/rpc.md)."""

    def request_stop(self) -> None:
        """Stop serving: in-flight requests are cancelled, the ledger flushed."""
