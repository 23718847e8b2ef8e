"""What an install attempt and a plan read from the installer, as a protocol.

``InstallAttempt`` (``attempt.py``) and ``plan_tool`` (``planning.py``) are handed the
``Installer`` that runs them; typing them with the class itself made the three files
import each other (under ``TYPE_CHECKING``). They name this protocol instead, which the
``Installer`` satisfies (mypy checks it where the installer hands itself over), so the
dependencies point one way: installer → attempt, planning → context.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tsukud.progress import Progress

if TYPE_CHECKING:
    import trio

    from tsukud.events.store import EventStore
    from tsukud.install.build import BuildSandbox
    from tsukud.install.homebrew.client import HomebrewClient
    from tsukud.install.registry import Registry
    from tsukud.install.results import Installed
    from tsukud.install.versions import VersionResolver
    from tsukud.net.http import Http
    from tsukud.policy.confirm import Confirmations
    from tsukud.recipe import Platform


class InstallContext(Protocol):
    home: Path
    registry: Registry
    resolver: VersionResolver
    http: Http
    store: EventStore
    installed: Callable[[], dict[str, dict[str, Any]]]
    github_url: Callable[[], str]
    env: dict[str, str]
    platform: Platform
    max_download_bytes: int
    confirmations: Confirmations | None
    ecosystem_urls: Callable[[], Mapping[str, str]]
    package_proxies: Callable[[], Mapping[str, str]]
    homebrew: HomebrewClient | None
    caller_path: Callable[[], str]
    # Where builds from source run (the build container); None: they cannot.
    builds: Callable[[], BuildSandbox] | None

    def lock(self, name: str) -> trio.Lock: ...

    async def install(
        self,
        name: str,
        version: str | None = None,
        *,
        force: bool = False,
        progress: Progress = ...,
        can_ask: bool = False,
        yes: bool = False,
        hidden: bool = False,
    ) -> Installed: ...
