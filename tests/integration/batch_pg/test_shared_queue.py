"""Daemons on one PostgreSQL drain one batch queue (issue 25, docs/design/scale.md "The
batch queue: leases and fence tokens"): real daemons in homes of their own, a real
PostgreSQL, the batch world's fakes. Every source ends exactly once, one recipe per
(tool, version) is a database fact, a daemon paused or killed past its lease loses its
job to another (fence + 1) and its late commit is refused and counted, a database cut
mid-run loses nothing, and an idle daemon is woken by another's news at once."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.conftest import Tsuku, start_together
from tests.fakes.batch_world import BatchWorld, batch_world
from tests.integration.batch.conftest import ctl_json, events
from tests.integration.batch_pg.conftest import LEASE_S, Team
from tests.pg import PgDatabase
from tests.tcp_proxy import TcpProxy
from tests.waiting import wait_until
from tsukud.errors import ExitCode

pytestmark = [pytest.mark.ctl_process]


@pytest.fixture
def world30() -> Iterator[BatchWorld]:
    with batch_world(30) as w:
        yield w


@pytest.fixture
def world12() -> Iterator[BatchWorld]:
    """Twelve sources: one npm package (``npmtool0``), one PyPI wheel (``pytool0``)."""
    with batch_world(12) as w:
        yield w


def start_run(t: Tsuku, jobs: int = 3) -> subprocess.Popen[str]:
    """A real ``tsukuctl batch run`` process (deterministic, without validation)."""
    return subprocess.Popen(
        [
            *(sys.executable, "-m", "tsukuctl", "batch", "run", "--deterministic-only"),
            *("--skip-validation", "--jobs", str(jobs), "--json"),
        ],
        env=t.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(run: subprocess.Popen[str], timeout: float = 240) -> dict[str, Any]:
    """The run's result (its last JSON line); it ends 0, or 1 with failed jobs."""
    try:
        out, err = run.communicate(timeout=timeout)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode in (0, ExitCode.GENERAL, ExitCode.PARTIAL_FAILURE), err
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def query(db: PgDatabase, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(db.url) as conn:
        return conn.execute(sql.encode(), args).fetchall()  # type: ignore[arg-type]


def item(db: PgDatabase, tool: str) -> dict[str, Any]:
    ((state, owner, fence, attempts, refused),) = query(
        db,
        "SELECT state, owner, fence, attempts, refused FROM tsuku.batch_items WHERE tool = %s",
        tool,
    )
    return {
        "state": state,
        "owner": owner,
        "fence": fence,
        "attempts": attempts,
        "refused": refused,
    }


def origin(t: Tsuku) -> str:
    return str(t.call("status")["events"]["origin"])


def one_source(world: BatchWorld, prefix: str) -> str:
    """The world's one good source from ``prefix``'s registry, as a queue line."""
    (line,) = [
        f"{s.tool} {s.source}\n"
        for s in world.sources
        if s.source.startswith(prefix) and s.expect == "done"
    ]
    return line


def verify_all(*daemons: Tsuku) -> None:
    for t in daemons:
        cp = t.ctl("events", "verify", "--all-origins", "--json")
        assert cp.returncode == 0, cp.stdout + cp.stderr
        assert len(json.loads(cp.stdout)["origins"]) == len(daemons)


def test_three_daemons_drain_one_queue_each_source_once(
    team: Team, world30: BatchWorld, pg_database: PgDatabase, tmp_path: Path
) -> None:
    daemons = [team(world30.env()) for _ in range(3)]
    start_together(*daemons)
    a, b, c = daemons
    assert ctl_json(a, "batch", "add", "-", input=world30.queue_text())["added"] == 30
    # The queue is one: another daemon sees it whole, and adding again queues nothing.
    assert ctl_json(b, "batch", "status")["counts"]["queued"] == 30
    again = ctl_json(c, "batch", "add", "-", input=world30.queue_text())
    assert again["added"] == 0 and len(again["already_queued"]) == 30

    runs = [start_run(t) for t in daemons]
    results = [finish(r) for r in runs]

    for t in daemons:  # every daemon's status is the one queue's
        status = ctl_json(t, "batch", "status", "--examples", "50")
        counts = status["counts"]
        assert counts["running"] == counts["queued"] == counts["backoff"] == 0, counts
        assert counts["done"] == len(world30.expected("done")), status["failures"]
        assert counts["failed"] == len(world30.expected("failed"))
        assert status["stale_commits"] == 0
    assert sum(r["done"] + r["failed"] for r in results) == 30
    assert sum(r["stale_commits"] for r in results) == 0

    # Every source ended exactly once, across the team's ledger.
    ended = events(a, "batch.done", "batch.failed")
    per_job = collections.Counter(e["payload"]["job"] for e in ended)
    assert len(per_job) == 30 and set(per_job.values()) == {1}
    workers = {e["origin"] for e in events(a, "batch.leased")}
    assert len(workers) >= 2, workers  # the work was shared
    # One recipe per (tool, version), and one per done source.
    recipes = query(pg_database, "SELECT tool, version, fence FROM tsuku.batch_recipes")
    assert {r[0] for r in recipes} == world30.expected("done")
    assert len(recipes) == len({(r[0], r[1]) for r in recipes}) == len(world30.expected("done"))

    out = tmp_path / "registry"
    first = ctl_json(b, "batch", "export", str(out), "--unvalidated")
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.toml"))
    assert sorted(first["written"]) == files
    assert files == sorted(f"recipes/{t[0]}/{t}.toml" for t in world30.expected("done"))
    again_export = ctl_json(c, "batch", "export", str(out), "--unvalidated")
    assert again_export["written"] == [] and again_export["unchanged"] == len(files)
    verify_all(*daemons)


def test_a_daemon_paused_past_its_lease_loses_the_job_and_its_late_commit_is_refused(
    team: Team, world12: BatchWorld, pg_database: PgDatabase
) -> None:
    """A is stopped (SIGSTOP) while its job waits on npm; B takes the job over with the
    next fence; A, woken while B still works on it (its own answer came while it
    slept: it is a lease ahead of B), finishes first and commits: the fence refuses it
    (rolled back, counted), and B's recipe is the one kept."""
    fake = world12.ecosystems
    fake.delay["npm"] = 3.0  # each npm answer: a job takes 6 s or more
    a, b = team(world12.env(), lease=3.0), team(world12.env(), lease=3.0)
    da, _db = start_together(a, b)
    line = one_source(world12, "npm:")
    tool = line.split()[0]
    ctl_json(a, "batch", "add", "-", input=line)
    run_a = start_run(a, jobs=1)
    wait_until(lambda: any(tool in r.path for r in list(fake.requests)), "A's job asking npm")
    assert item(pg_database, tool)["owner"].startswith(origin(a) + "/")
    os.kill(da.pid, signal.SIGSTOP)
    try:
        run_b = start_run(b, jobs=1)
        wait_until(
            lambda: item(pg_database, tool)["fence"] == 2,
            "B taking the job over after A's lease ran out",
            timeout=30,
        )
        taken = item(pg_database, tool)
        assert taken["state"] == "running" and taken["owner"].startswith(origin(b) + "/")
    finally:
        os.kill(da.pid, signal.SIGCONT)
    res_a = finish(run_a)
    fake.delay["npm"] = 0.0  # A's late commit is in: B need not wait out its answers
    fake.hurry()
    res_b = finish(run_b)

    assert res_a["stale_commits"] == 1 and res_a["done"] == 0
    assert res_b["done"] == 1 and res_b["stale_commits"] == 0
    final = item(pg_database, tool)
    assert (final["state"], final["fence"], final["refused"]) == ("done", 2, 1)
    assert final["owner"].startswith(origin(b) + "/")
    # Exactly one recipe: B's, under fence 2; A's commit left nothing.
    recipes = query(pg_database, "SELECT tool, fence, origin FROM tsuku.batch_recipes")
    assert recipes == [(tool, 2, origin(b))]
    (stale,) = events(a, "batch.stale_commit")
    assert stale["origin"] == origin(a)
    assert stale["payload"] | {} == {
        "job": stale["payload"]["job"],
        "fence": 1,
        "current": 2,
        "outcome": "batch.done",
    }
    (done,) = events(a, "batch.done")
    assert done["origin"] == origin(b) and done["payload"]["fence"] == 2
    for t in (a, b):
        assert ctl_json(t, "batch", "status")["stale_commits"] == 1
    verify_all(a, b)


def test_a_daemon_killed_mid_job_has_its_job_claimed_again_after_the_lease(
    team: Team, world12: BatchWorld, pg_database: PgDatabase
) -> None:
    world12.ecosystems.delay["npm"] = 2.0
    a, b = team(world12.env()), team(world12.env())
    da, _db = start_together(a, b)
    line = one_source(world12, "npm:")
    tool = line.split()[0]
    ctl_json(a, "batch", "add", "-", input=line)
    run_a = start_run(a, jobs=1)
    wait_until(lambda: item(pg_database, tool)["state"] == "running", "A running the job")
    origin_a = item(pg_database, tool)["owner"].split("/")[0]
    da.kill()
    da.wait()
    run_a.communicate(timeout=30)
    assert run_a.returncode != 0
    killed_at = time.monotonic()
    world12.ecosystems.delay["npm"] = 0.0  # B's answers at once: the lease is the wait

    res = finish(start_run(b, jobs=1))
    assert res["done"] == 1
    assert time.monotonic() - killed_at >= LEASE_S * 0.5  # not before the lease ran out
    final = item(pg_database, tool)
    assert (final["state"], final["fence"], final["attempts"]) == ("done", 2, 2)
    requeued = [e for e in events(b, "batch.requeued") if e["payload"]["reason"] == "lease expired"]
    assert [e["payload"]["fence"] for e in requeued] == [1]
    assert requeued[0]["origin"] == origin(b) != origin_a
    assert len(query(pg_database, "SELECT 1 FROM tsuku.batch_recipes")) == 1


def test_the_database_cut_mid_run_loses_nothing_and_the_run_goes_on(
    team: Team, world30: BatchWorld, pg_database: PgDatabase
) -> None:
    world30.set_latency(0.1)  # the run lasts long enough to be cut in the middle
    with TcpProxy(("127.0.0.1", pg_database.server.port)) as proxy:
        t = team(world30.env(), url=pg_database.url_via(proxy.port), lease=30.0)
        t.start()
        ctl_json(t, "batch", "add", "-", input=world30.queue_text())
        run = start_run(t, jobs=4)
        wait_until(
            lambda: ctl_json(t, "batch", "status")["counts"]["done"] >= 3,
            "a few jobs done before the cut",
        )
        proxy.cut()
        cp = t.ctl("batch", "status")
        assert cp.returncode == ExitCode.NETWORK, cp.stderr  # typed: ledger_unavailable
        assert "cannot be reached" in cp.stderr and "Traceback" not in cp.stderr
        time.sleep(2)  # workers meet the cut: claims, commits and job events refused
        assert run.poll() is None  # the run waits for the database, it does not end
        proxy.restore()
        res = finish(run)
        assert res["reason"] == "finished"
        status = ctl_json(t, "batch", "status", "--examples", "50")
        counts = status["counts"]
        assert counts["running"] == counts["queued"] == counts["backoff"] == 0, counts
        assert counts["done"] == len(world30.expected("done")), status["failures"]
        assert counts["failed"] == len(world30.expected("failed")), status["failures"]
        recipes = query(pg_database, "SELECT tool FROM tsuku.batch_recipes")
        assert sorted(r[0] for r in recipes) == sorted(world30.expected("done"))
        # Nothing ended twice; every job that ended is in the ledger once.
        ended = collections.Counter(
            e["payload"]["job"] for e in events(t, "batch.done", "batch.failed")
        )
        assert len(ended) == 30 and max(ended.values()) == 1
        assert t.ctl("events", "verify").returncode == 0


def test_a_job_added_on_one_daemon_wakes_an_idle_one_at_once(
    team: Team, world12: BatchWorld, pg_database: PgDatabase
) -> None:
    """B's run is idle (A holds the only job, a slow one); a job added on A is claimed
    by B through LISTEN/NOTIFY, long before B's backstop look (half a lease: 60 s)."""
    world12.ecosystems.delay["npm"] = 10.0  # A stays busy past the assertion below
    a, b = team(world12.env(), lease=120.0), team(world12.env(), lease=120.0)
    start_together(a, b)
    slow = one_source(world12, "npm:")
    ctl_json(a, "batch", "add", "-", input=slow)
    run_a = start_run(a, jobs=1)
    wait_until(lambda: item(pg_database, slow.split()[0])["state"] == "running", "A busy")
    run_b = start_run(b, jobs=1)
    time.sleep(1.0)  # B found nothing to claim and is waiting
    assert run_b.poll() is None
    quick = one_source(world12, "pypi:")
    added = time.monotonic()
    ctl_json(a, "batch", "add", "-", input=quick)
    wait_until(
        lambda: item(pg_database, quick.split()[0])["state"] != "queued",
        "B claiming the new job",
        timeout=10,
    )
    took = time.monotonic() - added
    assert took < 5, took  # the backstop would be 60 s
    assert item(pg_database, quick.split()[0])["owner"].startswith(origin(b) + "/")
    world12.ecosystems.delay["npm"] = 0.0  # A's answers come now, not 10 s after asked
    world12.ecosystems.hurry()
    res_a, res_b = finish(run_a), finish(run_b)
    assert (res_a["done"], res_b["done"]) == (1, 1)


def test_retry_and_clear_answer_for_the_whole_queue_from_any_daemon(
    team: Team, world12: BatchWorld, pg_database: PgDatabase
) -> None:
    """A's run fails the broken sources; B queues them again (``batch retry``); B may
    not clear the queue while A's run holds a live lease, and may once it ended."""
    a, b = team(world12.env()), team(world12.env())
    start_together(a, b)
    ctl_json(a, "batch", "add", "-", input=world12.queue_text())
    finish(start_run(a))
    failed = len(world12.expected("failed"))
    assert ctl_json(b, "batch", "status")["counts"]["failed"] == failed
    assert ctl_json(b, "batch", "retry", "--failed")["retried"] == failed
    assert ctl_json(a, "batch", "status")["counts"]["queued"] == failed

    world12.ecosystems.delay["npm"] = 5.0  # a broken npm source keeps A's run busy
    run_a = start_run(a, jobs=1)
    # The npm job itself: with one worker, another failed source may run (and end) first.
    running = "SELECT source FROM tsuku.batch_items WHERE state = 'running'"
    wait_until(
        lambda: any(src.startswith("npm:") for (src,) in query(pg_database, running)),
        "A running its npm job",
    )
    cp = b.ctl("batch", "clear")
    assert cp.returncode == ExitCode.ALREADY_RUNNING, cp.stderr
    assert "another daemon" in cp.stderr and "hint:" in cp.stderr
    world12.ecosystems.delay["npm"] = 0.0  # A need not be busy any longer
    world12.ecosystems.hurry()
    finish(run_a)
    assert ctl_json(b, "batch", "clear")["cleared"] == 12
    assert query(pg_database, "SELECT count(*) FROM tsuku.batch_items") == [(0,)]
    assert query(pg_database, "SELECT count(*) FROM tsuku.batch_recipes") == [(0,)]
    assert ctl_json(a, "batch", "status")["total"] == 0


@pytest.mark.slow  # each 503 job waits out the HTTP layer's own retries (~5 s)
def test_an_open_registry_breaker_holds_its_jobs_in_the_shared_queue(
    team: Team, world12: BatchWorld, pg_database: PgDatabase
) -> None:
    """The claim asks the breaker while its transaction is open: npm's jobs are rolled
    back to the queue untouched while its circuit is open, the other registries' jobs
    go on, and once npm answers again every job finishes, each once."""
    from tsukud.testing.packages import npm_tarball

    fake = world12.ecosystems
    npm = [f"pkg{i}" for i in range(6)]
    for name in npm:
        fake.publish_npm(npm_tarball(name, "1.0.0", {name: f"{name} 1.0.0"}))
    github = next(s for s in world12.sources if s.source.startswith("github:"))
    others = f"{github.tool} {github.source}\n" + one_source(world12, "pypi:")
    t = team(world12.env())
    t.env.update({"TSUKU_BREAKER_FAILURES": "3", "TSUKU_BREAKER_RESET_SECONDS": "1"})
    t.start()
    ctl_json(t, "batch", "add", "-", input="".join(f"{n} npm:{n}\n" for n in npm) + others)
    fake.fail["npm"] = 503
    try:
        run = start_run(t, jobs=4)

        def opened() -> bool:
            return any(
                e["payload"].get("scope") == "registry:npm" for e in events(t, "breaker.opened")
            )

        wait_until(opened, "npm's breaker opened", timeout=120)
        wait_until(
            lambda: ctl_json(t, "batch", "status")["counts"]["done"] == 2,
            "the GitHub and PyPI jobs done during the outage",
            timeout=120,
        )
        done = query(pg_database, "SELECT tool FROM tsuku.batch_items WHERE state = 'done'")
        assert not {r[0] for r in done} & set(npm)
    finally:
        del fake.fail["npm"]
    res = finish(run)
    assert res["done"] == len(npm) + 2 and res["waiting_on_breakers"] == {}, res
    status = ctl_json(t, "batch", "status")
    assert status["counts"]["done"] == len(npm) + 2 and status["counts"]["queued"] == 0
    ended = collections.Counter(e["payload"]["job"] for e in events(t, "batch.done"))
    assert len(ended) == len(npm) + 2 and set(ended.values()) == {1}
    assert t.ctl("events", "verify").returncode == 0


def test_the_database_crashing_mid_run_loses_nothing_and_the_runs_go_on(
    team: Team, world30: BatchWorld, pg_database: PgDatabase
) -> None:
    """``pg_ctl stop -m immediate`` (a crash: recovery from the WAL at the next start)
    while two daemons drain the queue: both runs wait for the database and finish once
    it is back, every source ending exactly once."""
    world30.set_latency(0.1)
    a, b = team(world30.env(), lease=30.0), team(world30.env(), lease=30.0)
    start_together(a, b)
    ctl_json(a, "batch", "add", "-", input=world30.queue_text())
    runs = [start_run(a), start_run(b)]
    wait_until(lambda: ctl_json(a, "batch", "status")["counts"]["done"] >= 3, "a few jobs done")
    pg_database.server.stop("immediate")
    try:
        cp = b.ctl("batch", "status")
        assert cp.returncode == ExitCode.NETWORK and "Traceback" not in cp.stderr, cp.stderr
        time.sleep(2)
        assert all(r.poll() is None for r in runs)  # waiting, not ended
    finally:
        pg_database.server.restart_stopped()
    results = [finish(r) for r in runs]
    assert all(r["reason"] == "finished" for r in results)
    status = ctl_json(b, "batch", "status")
    counts = status["counts"]
    assert counts["running"] == counts["queued"] == counts["backoff"] == 0, counts
    assert counts["done"] == len(world30.expected("done")), status
    ended = collections.Counter(
        e["payload"]["job"] for e in events(a, "batch.done", "batch.failed")
    )
    assert len(ended) == 30 and set(ended.values()) == {1}
    recipes = query(pg_database, "SELECT tool FROM tsuku.batch_recipes")
    assert sorted(r[0] for r in recipes) == sorted(world30.expected("done"))
    verify_all(a, b)
