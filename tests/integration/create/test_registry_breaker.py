"""The pieces a batch run loop calls, together against the real fake registries and a
real ledger: a registry answering 503 opens its ecosystem's breaker and its jobs are
deferred, not failed; jobs that fail for their own reasons (no such package) never open
one; when the registry recovers, one probe among many closes it and the jobs finish."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from tests.fakes.ecosystems import FakeEcosystems
from tests.unit.test_policy import ledger
from tsukud.batch.outcome import classify, ecosystem_of
from tsukud.clock import TrioClock
from tsukud.create.ecosystem_builders import DRAFTERS
from tsukud.net.http import Http, Settings
from tsukud.net.retry import RetryPolicy
from tsukud.policy.breaker import BreakerSettings, CircuitBreakers, registry_scope
from tsukud.source import EcosystemPackage, parse_source

COOL_DOWN = 0.5


@pytest.fixture
def registry() -> Iterator[FakeEcosystems]:
    with FakeEcosystems() as fake:
        yield fake


async def test_an_outage_defers_its_jobs_and_a_probe_closes_the_breaker(
    registry: FakeEcosystems, tmp_path: Path
) -> None:
    for name in ("a", "b", "c", "d", "e", "f"):
        registry.add_npm(name)
    quick = Settings(retry=RetryPolicy(max_tries=2, base_delay=0.01, max_delay=0.02))
    http = Http(settings=quick, allowed_hosts=lambda: ["127.0.0.1"])
    async with ledger(tmp_path / "t.db", TrioClock()) as lg:
        breakers = CircuitBreakers(
            lg.store, lg.state.breakers, lg.clock, lambda: BreakerSettings(3, COOL_DOWN)
        )

        async def job(source: str) -> str:
            """What the run loop does with one job."""
            eco = parse_source(source)
            assert isinstance(eco, EcosystemPackage)
            scope = registry_scope(ecosystem_of(source) or "unknown")
            if not breakers.admit(scope):
                return "deferred"
            try:
                base = registry.base(eco.ecosystem)
                await DRAFTERS[eco.ecosystem](http, base, eco.package, eco.package, None)
            except Exception as exc:
                failure = classify(exc, source=source)
                breakers.record(scope, failure)
                return failure.category
            breakers.record(scope, None)
            return "done"

        try:
            # PyPI answers, but none of these exist: failures, never an outage.
            for name in ("x", "y", "z", "w"):
                assert await job(f"pypi:{name}") == "not_found"
            assert breakers.state(registry_scope("pypi")) == "closed"

            registry.fail["npm"] = 503
            outcome = [await job(f"npm:{n}") for n in ("a", "b", "c", "d", "e")]
            assert outcome == ["transport"] * 3 + ["deferred"] * 2
            assert breakers.state(registry_scope("npm")) == "open"
            assert breakers.admit(registry_scope("pypi"))  # npm's outage is npm's
            breakers.release(registry_scope("pypi"))

            del registry.fail["npm"]
            await trio.sleep(COOL_DOWN + 0.1)
            results: dict[str, str] = {}

            async def run(name: str) -> None:
                results[name] = await job(f"npm:{name}")

            async with trio.open_nursery() as nursery:
                for name in ("a", "b", "c", "d", "e", "f"):
                    nursery.start_soon(run, name)
            assert sorted(results.values()) == ["deferred"] * 5 + ["done"]
            assert breakers.state(registry_scope("npm")) == "closed"
            for name, result in results.items():
                if result == "deferred":
                    assert await job(f"npm:{name}") == "done"
            types = [t for t in await lg.types() if t.startswith("breaker.")]
            assert types == [
                *["breaker.failure"] * 3,
                "breaker.opened",
                "breaker.half_opened",
                "breaker.closed",
            ]
        finally:
            await http.aclose()
