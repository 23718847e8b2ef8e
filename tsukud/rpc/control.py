"""What the daemon's own RPC methods see of the daemon: its state and its controls.

Feature methods receive :class:`~tsukud.services.Services`; the few methods about the
daemon itself (``status``, ``daemon.stop``, ``config.*``) receive this narrower face
instead of the ``Daemon`` class, so no methods module depends on the daemon's
lifecycle code (``tests/unit/rpc/test_handlers_take_services.py`` holds them to it).
``tsukud.daemon.Daemon`` is the one implementation (``Daemon.control``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tsukud.config import Config


class DaemonControl(Protocol):
    @property
    def config(self) -> Config:
        """The daemon's own settings (its file and environment, no caller's on top)."""

    def refresh_config(self) -> None:
        """Pick up an edit of the settings file and record what changed."""

    async def refresh_shared(self) -> None:
        """Before ``status``: the numbers every daemon on a shared ledger sees."""

    def status(self) -> dict[str, Any]:
        """The daemon's state as ``status`` answers it (schema/rpc.md)."""

    def request_stop(self) -> None:
        """Stop serving: in-flight requests are cancelled, the ledger flushed."""
