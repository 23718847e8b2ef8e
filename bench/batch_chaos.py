"""batch_chaos: issue 25's acceptance run, with chaos, run by a person or CI at will (not
part of the test suite; ``tests/integration/batch_pg/test_batch_chaos.py`` runs it small
so it cannot rot).

Three daemons (homes of their own) on one PostgreSQL (started for the run from Debian's
``postgresql``: ``tests/pg.py``) drain the batch world's sources (``tests/fakes/
batch_world.py``: GitHub releases, npm, PyPI, bottles, some broken) with ``batch run
--llm`` against the greedy fake Claude (real SDK; it reads as much as it may on every
turn and counts what it bills) under one shared daily budget. The third daemon reaches
the database through a loopback proxy (``tests/tcp_proxy.py``). During the run:

- ``kill -9`` of the first daemon, started again (and its batch run with it);
- ``SIGSTOP`` of the second past its leases (the batch lease and the budget holds'
  ``policy.hold_lease_seconds``), then ``SIGCONT``;
- the third's database connection cut at the proxy for ``--cut`` seconds;
- then PostgreSQL stopped as by a crash (``pg_ctl stop -m immediate``) and started.

The first three overlap (the kill, the pause and the cut start together), the crash
follows. Checked, each printed with its figures (exit 1 if one fails):

- the fake's bill, sampled every 50 ms throughout, never above the budget;
- every source done, failed (with a reason) or deferred; none queued, running or in
  backoff;
- ``batch export`` writes each done tool's recipe once;
- ``events verify`` passes on every daemon and ``--all-origins``;
- the ledger equals the bill: the calls answered (``llm.turn``) are at most the bill, and
  the bill is covered by them plus the calls cut off (``llm.cut_off``, charged at their
  worst case, marked estimated); nothing is left held in the shared day, which never
  passed its limit;
- the woken daemon's stale commits refused and counted (``stale_commits``; shown).

    .venv/bin/python bench/batch_chaos.py              # 300 sources, a 30 s cut
    .venv/bin/python bench/batch_chaos.py --small      # 30 sources, short leases
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from _common import BIN, REPO, Home, temp_home, wait_ping

sys.path.insert(0, str(REPO))

NAME = "batch_chaos"


@dataclass(frozen=True)
class Plan:
    sources: int
    budget: Decimal  # the team's daily budget, USD
    lease_s: float  # batch.lease_seconds
    hold_lease_s: float  # policy.hold_lease_seconds
    cut_s: float  # the third daemon's connection cut for this long
    latency_s: float  # every fake answer (registries, GitHub, the model) waits this
    jobs: int  # workers per daemon
    start_after: int  # the chaos begins once this many calls were billed

    @property
    def pause_s(self) -> float:
        """Past both leases, with a margin for a loaded machine."""
        return max(self.lease_s, self.hold_lease_s) * 1.5 + 1


FULL = Plan(300, Decimal("12.00"), 20, 20, 30, 0.1, 3, 20)
SMALL = Plan(30, Decimal("3.00"), 1.5, 1.5, 3, 0.05, 2, 3)


@dataclass
class Check:
    name: str
    ok: bool
    figures: str


@dataclass
class Run:
    """Everything the checks read, gathered during the run."""

    samples: list[Decimal] = field(default_factory=list)
    chaos: list[str] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--small", action="store_true", help="30 sources, short leases and cut")
    ap.add_argument("--sources", type=int, help="override the plan's number of sources")
    ap.add_argument("--cut", type=float, help="override the plan's cut, seconds")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    plan = SMALL if args.small else FULL
    if args.sources or args.cut:
        plan = Plan(
            args.sources or plan.sources,
            plan.budget,
            plan.lease_s,
            plan.hold_lease_s,
            args.cut if args.cut is not None else plan.cut_s,
            plan.latency_s,
            plan.jobs,
            plan.start_after,
        )
    from tests.pg import running_server

    print(
        f"# {NAME}: {plan.sources} sources, 3 daemons, budget ${plan.budget}, batch lease "
        f"{plan.lease_s} s, hold lease {plan.hold_lease_s} s, pause {plan.pause_s} s, "
        f"cut {plan.cut_s} s, fakes {plan.latency_s * 1000:.0f} ms late",
        flush=True,
    )
    with running_server() as server:
        if server is None:
            print(f"{NAME}: NOT RUN (PostgreSQL is not installed: scripts/dev setup)")
            return 2
        checks = acceptance_run(plan, server)
    for c in checks:
        print(f"{NAME}.{c.name}: {'ok' if c.ok else 'FAILED'} ({c.figures})", flush=True)
    failed = [c.name for c in checks if not c.ok]
    print(
        f"{NAME}: {'all invariants hold' if not failed else 'FAILED: ' + ', '.join(failed)}",
        flush=True,
    )
    return 1 if failed else 0


def acceptance_run(plan: Plan, server: Any) -> list[Check]:
    from tests.fakes.anthropic_server import FakeAnthropic
    from tests.fakes.batch_world import batch_world
    from tests.integration.create.greedy import Greedy
    from tests.integration.create.helpers import CLAUDE_KEY
    from tests.tcp_proxy import TcpProxy

    db_name = server.create_database()
    url = server.admin_url(db_name)
    greedy = Greedy()
    run = Run()
    world = batch_world(plan.sources)
    with (
        world,
        FakeAnthropic(fallback=greedy) as claude,
        TcpProxy(("127.0.0.1", server.port)) as proxy,
        contextlib.ExitStack() as stack,
    ):
        world.set_latency(plan.latency_s)
        claude.latency = plan.latency_s
        homes = [stack.enter_context(temp_home(f"tkc{i}-")) for i in range(3)]
        for i, h in enumerate(homes):
            h.env.update(world.env())
            h.env.update(
                {
                    "ANTHROPIC_API_KEY": CLAUDE_KEY,
                    "ANTHROPIC_BASE_URL": claude.url,
                    "TSUKU_LLM_DAILY_BUDGET": str(plan.budget),
                    "TSUKU_LLM_HOURLY_LIMIT": "100000",
                    "TSUKU_BATCH_LEASE_SECONDS": str(plan.lease_s),
                    "TSUKU_POLICY_HOLD_LEASE_SECONDS": str(plan.hold_lease_s),
                    "TSUKU_LEDGER_URL": url if i < 2 else server_url_via(server, db_name, proxy),
                }
            )
            h.spawn()
        for h in homes:
            assert h.proc is not None
            wait_ping(h.socket, h.proc, timeout=60)
        ctl(homes[0], "batch", "add", "-", stdin=world.queue_text())
        sampling = threading.Event()
        sampler = threading.Thread(target=sample, args=(greedy, run, sampling), daemon=True)
        sampler.start()
        runs: list[subprocess.Popen[str]] = [start_run(h, plan) for h in homes]
        finished: list[subprocess.Popen[str]] = []
        chaos = threading.Thread(
            target=do_chaos, args=(plan, server, homes, proxy, greedy, runs, run), daemon=True
        )
        chaos.start()
        chaos.join()
        deadline = time.monotonic() + 900
        while runs:  # the killed daemon's new run was appended by the chaos
            p = runs.pop(0)
            try:
                out, _err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                out, _err = p.communicate()
            finished.append(p)
            if out.strip():
                with contextlib.suppress(ValueError):
                    run.results.append(json.loads(out.strip().splitlines()[-1]))
        sampling.set()
        sampler.join()
        for line in run.chaos:
            print(f"{NAME}.chaos_log: {line}")
        checks = check_all(plan, homes, url, world, greedy, run)
        for h in homes:
            h.close()
    server.drop_database(db_name)
    return checks


def server_url_via(server: Any, database: str, proxy: Any) -> str:
    from tests.pg import ADMIN
    from tests.pg import url as pg_url

    return pg_url(ADMIN, server.password, proxy.address[1], database)


def ctl(h: Home, *args: str, stdin: str | None = None, timeout: float = 300) -> Any:
    """``tsukuctl ... --json``'s last line, or its error (exit code and stderr)."""
    cp = subprocess.run(
        [str(BIN / "tsukuctl"), *args, "--json"],
        env=h.env,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    lines = cp.stdout.strip().splitlines()
    if not lines:
        return {"exit": cp.returncode, "error": cp.stderr[-400:]}
    try:
        out = json.loads(lines[-1])
    except ValueError:
        return {"exit": cp.returncode, "error": cp.stdout[-400:]}
    if isinstance(out, dict):
        out.setdefault("exit", cp.returncode)
    return out


def start_run(h: Home, plan: Plan) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            *(str(BIN / "tsukuctl"), "batch", "run", "--llm", "--yes", "--skip-validation"),
            *("--jobs", str(plan.jobs), "--json"),
        ],
        env=h.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def sample(greedy: Any, run: Run, stop: threading.Event) -> None:
    """The fake's bill (answered and held calls alike: both reached the provider)."""
    while not stop.wait(0.05):
        with greedy.lock:
            run.samples.append(sum((*greedy.billed, *greedy.held), Decimal(0)))
    with greedy.lock:
        run.samples.append(sum((*greedy.billed, *greedy.held), Decimal(0)))


def do_chaos(
    plan: Plan,
    server: Any,
    homes: list[Home],
    proxy: Any,
    greedy: Any,
    runs: list[subprocess.Popen[str]],
    run: Run,
) -> None:
    t0 = time.monotonic()

    def say(what: str) -> None:
        line = f"{time.monotonic() - t0:6.1f} s  {what}"
        run.chaos.append(line)
        print(f"{NAME}.chaos: {line}", flush=True)

    wait_for(lambda: len(greedy.billed) >= plan.start_after, 300)
    say(f"{len(greedy.billed)} calls billed: chaos begins")

    def kill_and_restart() -> None:
        h = homes[0]
        assert h.proc is not None
        os.kill(h.proc.pid, signal.SIGKILL)
        h.proc.wait()
        say("daemon 1 killed (kill -9)")
        h.spawn()
        assert h.proc is not None
        try:
            wait_ping(h.socket, h.proc, timeout=60)
        except RuntimeError as e:  # say why: the daemon's own words are in its stderr
            said = (h.path / "bench-daemon.stderr").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{e}; its stderr ends:\n{said}") from None
        runs.append(start_run(h, plan))
        say("daemon 1 started again, its batch run with it")

    def pause() -> None:
        h = homes[1]
        assert h.proc is not None
        os.kill(h.proc.pid, signal.SIGSTOP)
        say(f"daemon 2 stopped (SIGSTOP) for {plan.pause_s:.1f} s, past its leases")
        time.sleep(plan.pause_s)
        os.kill(h.proc.pid, signal.SIGCONT)
        say("daemon 2 woken (SIGCONT)")

    def cut() -> None:
        proxy.cut()
        say(f"daemon 3's database connection cut for {plan.cut_s:.1f} s")
        time.sleep(plan.cut_s)
        proxy.restore()
        say("daemon 3's connection restored")

    threads = [threading.Thread(target=f) for f in (kill_and_restart, pause, cut)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    server.stop("immediate")
    say("PostgreSQL stopped (pg_ctl stop -m immediate)")
    time.sleep(1.0)
    server.restart_stopped()
    say("PostgreSQL started again")


def wait_for(cond: Callable[[], bool], timeout: float) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError("the run made no progress")
        time.sleep(0.05)


@contextlib.contextmanager
def _connect(url: str) -> Iterator[Any]:
    import psycopg

    with psycopg.connect(url) as conn:
        yield conn


def check_all(
    plan: Plan, homes: list[Home], url: str, world: Any, greedy: Any, run: Run
) -> list[Check]:
    checks: list[Check] = []
    budget = plan.budget
    peak = max(run.samples, default=Decimal(0))
    checks.append(
        Check(
            "bill_within_budget",
            peak <= budget,
            f"peak ${peak:.4f} of ${budget} in {len(run.samples)} samples",
        )
    )
    status = ctl(homes[0], "batch", "status", "--examples", "1000")
    counts = status.get("counts", {})
    ended = sum(counts.get(k, 0) for k in ("done", "failed", "deferred"))
    left = {k: counts.get(k, 0) for k in ("queued", "running", "backoff")}
    with _connect(url) as conn:
        unexplained = conn.execute(
            "SELECT count(*) FROM tsuku.batch_items WHERE state = 'failed'"
            " AND coalesce(category, '') = ''"
        ).fetchone()[0]
        refused = conn.execute(
            "SELECT coalesce(sum(refused), 0) FROM tsuku.batch_items"
        ).fetchone()[0]
        done_tools = conn.execute(
            "SELECT count(DISTINCT tool) FROM tsuku.batch_items WHERE state = 'done'"
        ).fetchone()[0]
        day = conn.execute(
            "SELECT coalesce(sum(limit_micro), 0), coalesce(sum(held_micro), 0),"
            " coalesce(sum(open_micro), 0), coalesce(sum(spent_micro), 0) FROM tsuku.budget_days"
        ).fetchone()
        expired = conn.execute(
            "SELECT count(*) FROM tsuku.budget_holds WHERE settled_by IS NOT NULL"
        ).fetchone()[0]
    checks.append(
        Check(
            "every_source_ended",
            ended == plan.sources and not any(left.values()) and unexplained == 0,
            f"{json.dumps({k: counts.get(k, 0) for k in ('done', 'failed', 'deferred')})} of "
            f"{plan.sources}; left {json.dumps(left)}; failed without a reason {unexplained}",
        )
    )
    with tempfile.TemporaryDirectory(prefix="tkc-export-") as out:
        exported = ctl(homes[0], "batch", "export", out, "--unvalidated")
        files = sorted(p.name for p in Path(out).rglob("*.toml"))
    once = len(files) == len(set(files)) == exported.get("recipes", -1) == done_tools
    checks.append(
        Check(
            "export_once",
            once,
            f"{len(files)} files, {exported.get('recipes')} recipes, {done_tools} tools done",
        )
    )
    verified = []
    for i, h in enumerate(homes):
        v = ctl(h, "events", "verify")
        verified.append((f"daemon {i + 1}", v.get("exit") == 0, v.get("checked")))
    every = ctl(homes[0], "events", "verify", "--all-origins")
    origins = every.get("origins") or []
    verified.append(
        (
            f"all {len(origins)} origins",
            every.get("exit") == 0 and len(origins) == len(homes),
            sum(int(o.get("checked", 0)) for o in origins),
        )
    )
    checks.append(
        Check(
            "events_verify",
            all(ok for _w, ok, _n in verified),
            "; ".join(f"{w}: {'ok' if ok else 'FAILED'} ({n} checked)" for w, ok, n in verified),
        )
    )
    events = team_events(homes[0], "llm.turn", "llm.cut_off")
    turns = sum(
        (Decimal(str(e["payload"].get("cost_usd", 0))) for e in events if e["type"] == "llm.turn"),
        Decimal(0),
    )
    cut = [e for e in events if e["type"] == "llm.cut_off"]
    cut_cost = sum((Decimal(str(e["payload"].get("cost_usd", 0))) for e in cut), Decimal(0))
    estimated = all(e["payload"].get("estimated", True) for e in cut)
    bill = sum((*greedy.billed, *greedy.held), Decimal(0))
    tolerance = Decimal("0.00001") * max(1, len(events))
    limit, held, open_, spent = (Decimal(x) / 1_000_000 for x in day)
    checks.append(
        Check(
            "ledger_equals_bill",
            turns <= bill + tolerance
            and bill <= turns + cut_cost + tolerance
            and estimated
            and (len(cut) > 0 or abs(turns - bill) <= tolerance),
            f"bill ${bill:.6f} ({len(greedy.billed) + len(greedy.held)} calls); ledger "
            f"${turns + cut_cost:.6f} = answered ${turns:.6f} ({len(events) - len(cut)} "
            f"llm.turn) + cut off ${cut_cost:.6f} ({len(cut)} llm.cut_off, worst case, "
            f"{'all' if estimated else 'NOT all'} estimated)",
        )
    )
    checks.append(
        Check(
            "nothing_held_and_day_within_limit",
            open_ == 0 and held <= limit and spent <= limit,
            f"day: limit ${limit}, held ${held}, open ${open_}, spent ${spent}; "
            f"{expired} hold(s) of a silent daemon settled by another at their worst case",
        )
    )
    stale_events = len(team_events(homes[0], "batch.stale_commit"))
    checks.append(
        Check(
            "stale_commits_counted",
            int(refused) == stale_events,
            f"{refused} stale commits refused by the fence (the queue's rows), "
            f"{stale_events} batch.stale_commit events; the runs reported "
            f"{[r.get('stale_commits', 0) for r in run.results]} (a job given back after its "
            "lease was lost counts there too)",
        )
    )
    if not all(c.ok for c in checks):
        diagnose(homes[0], url)
        from tsukud import paths

        for i, h in enumerate(homes):
            try:
                text = Path(paths.log_path(h.env)).read_text(errors="replace")
            except OSError:
                text = h.stderr_tail()
            for line in text.splitlines():
                if "budget" in line or "settle" in line or "error" in line.lower():
                    print(f"{NAME}.diagnose: daemon {i + 1} log: {line[:300]}")
    return checks


def diagnose(h: Home, url: str) -> None:
    """For a failed run: the team's money events by type and origin, and the holds
    still open, each with whether its ``budget.reserved`` is in the ledger."""
    import collections

    money = team_events(h, "llm.", "budget.")
    by = collections.Counter((e["origin"], e["type"]) for e in money)
    for (origin, type_), n in sorted(by.items()):
        print(f"{NAME}.diagnose: {origin} {type_} x{n}")
    reserved = {e["payload"].get("reservation") for e in money if e["type"] == "budget.reserved"}
    with _connect(url) as conn:
        rows = conn.execute(
            "SELECT reservation, origin, amount_micro, made_at FROM tsuku.budget_holds"
            " WHERE actual_micro IS NULL"
        ).fetchall()
    for rid, origin, amount, made in rows:
        print(
            f"{NAME}.diagnose: open hold {rid} of {origin}, {amount} micro-USD, made {made}; "
            f"budget.reserved {'recorded' if rid in reserved else 'NOT recorded'}"
        )


def team_events(h: Home, *types: str) -> list[dict[str, Any]]:
    args = [str(BIN / "tsukuctl"), "events", "--json", "--limit", "0"]
    for t in types:
        args += ["--type", t]
    cp = subprocess.run(args, env=h.env, capture_output=True, text=True, check=True, timeout=300)
    return [json.loads(x) for x in cp.stdout.splitlines() if x.strip()]


if __name__ == "__main__":
    raise SystemExit(main())
