"""The composition root wires each service from the daemon's own parts, once, lazily,
and with the live configuration (a real Daemon over a real ledger; no network)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from tests.integration.hooks.test_hook_index_service import wait_for
from tsukud import config as configmod
from tsukud.clock import FixedClock
from tsukud.daemon import Daemon
from tsukud.hooks.index import index_path


@pytest.fixture
def d(tmp_path: Path) -> Iterator[Daemon]:
    env = {"TSUKU_HOME": str(tmp_path), "HOME": str(tmp_path), "TSUKU_LLM_PROVIDER": "claude"}
    daemon = Daemon(config=configmod.resolve(env=env), env=env, clock=FixedClock(1.8e9))
    daemon.open()
    yield daemon
    daemon.store.close_connection()


async def test_services_are_built_once_from_the_daemons_parts(d: Daemon) -> None:
    s = d.services
    built = vars(s)
    assert not {"http", "llm", "installer", "discovery", "creator"} & set(built)

    llm = s.llm
    assert llm is s.llm  # one per daemon
    assert llm.budget is d.budget and llm.breakers is d.breakers
    assert llm.generations is d.generations and llm.store is d.store
    assert llm.confirmations is s.confirmations  # answers reach the asking run
    assert "http" not in built  # the LLM service needs no HTTP client of ours

    discovery = s.discovery
    assert discovery.confirmations is s.confirmations and discovery.clock is d.clock
    assert "github" not in built  # built when discovery first verifies a repository

    installer = s.installer
    assert installer.store is d.store and installer.http is s.http
    assert installer.registry.http is s.http  # one HTTP client for the whole daemon
    assert s.github.http is s.http
    assert s.creator.clock is d.clock
    await s.aclose()


async def test_configuration_is_read_live(d: Daemon) -> None:
    llm = d.services.llm
    # The chosen provider first, the others after it (llm.only_provider is off).
    assert llm.order() == ["claude", "gemini", "local"]
    d.config = configmod.resolve(
        env={**d.env, "TSUKU_LLM_PROVIDER": "gemini,claude"}, path=d.config.path
    )
    assert llm.order() == ["gemini", "claude", "local"]  # the same service, the new setting


async def test_background_work_waits_for_the_daemon_to_serve(d: Daemon, tmp_path: Path) -> None:
    index = d.services.hook_index
    index.request_rebuild()  # not serving yet: remembered, nothing raised
    assert index._dirty and not index._scheduled
    async with trio.open_nursery() as nursery:
        await nursery.start(d.store.run)
        d.nursery = nursery
        index.request_rebuild()
        await wait_for(lambda: index.last is not None)  # run in the daemon's nursery
        assert index.last is not None
        assert index.last.path == index_path(str(tmp_path))
        d.store.close()
