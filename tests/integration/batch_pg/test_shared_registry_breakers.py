"""A batch's registry breakers shared in PostgreSQL (``tsukud/policy/pg_breakers.py``,
``admit_job``): a circuit one daemon's failures opened holds that registry's jobs back
from every daemon until its cool-down ends, and then one job, of one daemon, is the
probe. Real daemons, a real PostgreSQL, the batch world's fakes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest

from tests.fakes.batch_world import BatchWorld, batch_world
from tests.integration.batch.conftest import ctl_json, events
from tests.integration.batch_pg.conftest import Team
from tests.integration.batch_pg.test_shared_queue import finish, one_source, query, start_run
from tests.pg import PgDatabase
from tests.waiting import wait_until
from tsukud.batch.sources import job_id
from tsukud.testing.packages import npm_tarball

pytestmark = [pytest.mark.ctl_process]

SCOPE = "registry:npm"
COOL_DOWN_S = 4


@pytest.fixture
def world() -> Iterator[BatchWorld]:
    with batch_world(12) as w:
        yield w


def when(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


@pytest.mark.slow  # npm's 500s wait out the HTTP layer's retries, then a cool-down (12-18 s)
def test_a_registry_circuit_opened_by_one_daemon_holds_its_jobs_back_from_another(
    team: Team, world: BatchWorld, pg_database: PgDatabase
) -> None:
    """A's job meets npm failing (500) and opens ``registry:npm`` (threshold 1). B, run
    while it is open, does its PyPI job and claims no npm job until the cool-down ends;
    then exactly one daemon sends the probe, npm answers, and every job ends done."""
    fake = world.ecosystems
    npm = [f"pkg{i}" for i in range(4)]
    for name in npm:
        fake.publish_npm(npm_tarball(name, "1.0.0", {name: f"{name} 1.0.0"}))
    env = {
        **world.env(),
        "TSUKU_BREAKER_FAILURES": "1",
        "TSUKU_BREAKER_RESET_SECONDS": str(COOL_DOWN_S),
    }
    a, b = team(env), team(env)
    a.start()
    b.start()
    fake.fail["npm"] = 500
    try:
        ctl_json(a, "batch", "add", "-", input="pkg0 npm:pkg0\n")
        run_a = start_run(a, jobs=1)
        wait_until(
            lambda: (
                query(pg_database, "SELECT state FROM tsuku.breakers WHERE scope = %s", SCOPE)
                == [("open",)]
            ),
            "A's failure opening npm's circuit for the team",
            timeout=60,
        )
    finally:
        del fake.fail["npm"]
    ((opened_at, open_until),) = query(
        pg_database, "SELECT opened_at, open_until FROM tsuku.breakers WHERE scope = %s", SCOPE
    )
    pypi = one_source(world, "pypi:")
    ctl_json(b, "batch", "add", "-", input="".join(f"{n} npm:{n}\n" for n in npm[1:]) + pypi)
    run_b = start_run(b, jobs=2)
    res_a, res_b = finish(run_a), finish(run_b)

    assert res_a["done"] + res_b["done"] == len(npm) + 1, (res_a, res_b)
    npm_jobs = {job_id(n, f"npm:{n}") for n in npm}
    pypi_job = job_id(*pypi.split())
    leased = events(a, "batch.leased")  # the whole team's
    held_back = [
        e
        for e in leased
        if e["payload"]["job"] in npm_jobs and opened_at <= when(e["ts"]) < open_until
    ]
    assert held_back == [], "an npm job was claimed while the team's circuit was open"
    (b_pypi,) = [e for e in leased if e["payload"]["job"] == pypi_job]
    assert b_pypi["origin"] == b.call("status")["events"]["origin"]
    assert when(b_pypi["ts"]) < open_until  # B was claiming meanwhile
    probes = [e for e in events(a, "breaker.half_opened") if e["payload"].get("scope") == SCOPE]
    assert len(probes) == 1, probes
    assert query(
        pg_database, "SELECT state, failures FROM tsuku.breakers WHERE scope = %s", SCOPE
    ) == [("closed", 0)]
    counts = ctl_json(b, "batch", "status")["counts"]
    assert counts["done"] == len(npm) + 1 and counts["queued"] == counts["running"] == 0
