"""Fixtures: the fake world (module-scoped servers, reset for each test) and a fresh
TSUKU_HOME per test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import short_home
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.ecosystems import FakeEcosystems
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.github import FakeGitHub
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.search import FakeSearch, fixture
from tests.integration.discover.helpers import World, set_repo, stripe_world
from tsukud.testing.download_host import FakeDownloadHost


@pytest.fixture(scope="module")
def servers() -> Iterator[World]:
    with (
        FakeGitHub() as github,
        FakeEcosystems() as eco,
        FakeSearch() as search,
        FakeAnthropic() as claude,
        FakeGemini() as gemini,
        FakeOpenAI() as local,
    ):
        stripe_world(github)
        yield World(github, eco, search, claude, gemini, local)


@pytest.fixture
def world(servers: World) -> Iterator[World]:
    """The module's servers with every script and knob reset around the test."""

    def reset() -> None:
        w = servers
        w.github.clear_overrides()
        w.github.rate_limit_remaining = None
        set_repo(w.github, "stripe/stripe-cli")  # 1,800 stars, an organisation, not a fork
        for store in (
            w.eco.crates,
            w.eco.npm,
            w.eco.npm_downloads,
            w.eco.pypi,
            w.eco.gems,
            w.eco.gem_versions,
            w.eco.go,
            w.eco.go_versions,
            w.eco.npm_files,
            w.eco.pypi_files,
            w.eco.delay,
            w.eco.fail,
        ):
            store.clear()
        w.eco.requests.clear()
        s = w.search
        s.ddg_statuses.clear()
        s.tavily_statuses.clear()
        s.brave_statuses.clear()
        s.ddg_html = fixture("ddg_success.html")
        s.tavily_body = fixture("tavily_success.json")
        s.brave_body = fixture("brave_success.json")
        s.delay = 0.0
        for f in (s, w.claude, w.gemini, w.local):
            f._queue.clear()
            f.requests.clear()

    reset()
    yield servers
    reset()


@pytest.fixture
def home() -> Iterator[Path]:
    path = short_home()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def vendor() -> Iterator[FakeDownloadHost]:
    """A vendor's site on loopback: its install page, downloads and version feed."""
    with FakeDownloadHost() as fake:
        yield fake
