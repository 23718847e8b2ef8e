"""``tsukuctl eval`` and ``create --repairs`` against a real tsukud, the fake GitHub and
the answering fake model (real Anthropic SDK): the figures, the repair value, the
comparison's significance, and a run stopped by ``--max-usd`` whose ledger total is the
fake's bill. Validation is skipped (``--skip-validation``): the answers are held to the
known assets, and a wrong first answer fails the static checks' replay against the
release, which is what sends the model a repair."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.conftest import Tsuku
from tests.fakes.answering_model import AnsweringAnthropic, chosen
from tests.integration.eval.conftest import WRONG_FIRST_RATE
from tests.integration.eval.helpers import events
from tsukuctl.render import money
from tsukud.errors import ExitCode

# claude-sonnet-5-5's row in llm/prices.toml (USD per million tokens)
INPUT_PRICE, OUTPUT_PRICE = 2.0, 10.0


def eval_json(t: Tsuku, *args: str, shell_env: dict[str, str] | None = None) -> dict[str, Any]:
    cp = t.ctl(
        "eval",
        "create",
        "--skip-validation",
        "--yes",
        "--json",
        *args,
        timeout=300,
        shell_env=shell_env,
    )
    assert cp.returncode == 0, cp.stderr
    res: dict[str, Any] = json.loads(cp.stdout)
    return res


def builtin_items() -> list[dict[str, Any]]:
    from importlib import resources

    data = resources.files("tsukud.eval").joinpath("corpus.json").read_text()
    items: list[dict[str, Any]] = json.loads(data)["items"]
    return items


def test_eval_repairs_0_against_2_and_compare(home: Tsuku, model: AnsweringAnthropic) -> None:
    """The acceptance: against a model wrong on a known 30 % of first attempts and
    right after one repair, ``--repairs 0`` reports 70 %, ``--repairs 2`` 100 % with
    every figure printed, and ``eval compare`` calls the difference significant."""
    home.start()
    items = builtin_items()
    wrong = chosen((i["source"].removeprefix("github:") for i in items), WRONG_FIRST_RATE)
    assert len(wrong) == 6 and len(items) == 20

    # The two runs at once (each is its own request, its items one at a time).
    with ThreadPoolExecutor(1) as pool:
        other = pool.submit(eval_json, home, "--repairs", "0")
        cp = home.ctl(
            "eval", "create", "--corpus", "builtin", "--skip-validation", "--yes", timeout=300
        )
        none = other.result()
    f0 = none["figures"]
    assert (f0["items"], f0["passed"], f0["success_rate"]) == (20, 14, 0.7)
    assert f0["failures"] == {"static_check": 6} and f0["turns_total"] == 14 + 6 * 5
    lo, hi = f0["interval"]
    assert 0.48 < lo < 0.49 and 0.85 < hi < 0.86  # Wilson, 14 of 20
    assert none["model"] == "claude-sonnet-5-5" and none["prompt_version"]
    assert none["spent_usd"] == round(f0["cost_total_usd"], 9) < none["worst_case_usd"]

    assert cp.returncode == 0, cp.stderr
    assert "at most $" in cp.stderr  # the worst case, stated before spending
    for want in (
        "success rate: 100.0 % (20 of 20), 95 % interval 83.9 % to 100.0 % (Wilson)",
        "wall time per recipe: P50 ",
        "cost per recipe: median $0.0075, P95 $",
        # 14 right at the first turn; 6 wrong for a whole round of 5 turns, then right
        "turns: median 1, total 50",
        "repairs used: 6 in all; items by repairs 0: 14, 1: 6; 6 passed after a repair",
        "failures: none",
    ):
        assert want in cp.stdout, cp.stdout
    two = cp.stdout.split()[1].rstrip(":")

    cp = home.ctl("eval", "compare", none["run"], two)
    assert cp.returncode == 0, cp.stderr
    assert "success rate: 70.0 % → 100.0 % (+30.0 points), p = 0.0202" in cp.stdout
    assert "Fisher's exact test, two-sided): significant at 5 %" in cp.stdout
    assert "note: the runs answered different corpora" not in cp.stdout

    (started,) = events(home, "eval.started", session=two)
    assert started["payload"]["repairs"] == 2
    assert started["payload"]["corpus_hash"] == none["corpus_hash"]
    assert len(events(home, "eval.item", session=two)) == 20
    (done,) = events(home, "eval.completed", session=two)
    assert done["payload"]["reason"] == "finished" and done["payload"]["passed"] == 20


def test_repairs_flag_a_run_stopped_by_max_usd_and_a_replay(
    home: Tsuku, model: AnsweringAnthropic, tmp_path: Path
) -> None:
    """``create --repairs``: a tool the model gets wrong first fails with no repair and
    passes with one, and the generation events say how many the run was allowed. Then
    an eval over a corpus directory stopped by ``--max-usd``: partial figures, and the
    ledger's total is the fake's bill. Then a recorded run replayed (one daemon for all:
    its SDK import is seconds)."""
    items = builtin_items()
    wrong = [i for i in items if i["source"].removeprefix("github:").lower() in model.wrong_first]
    tool, source = wrong[0]["tool"], wrong[0]["source"]
    home.start()
    # No --yes and no one to ask: the worst case is refused before anything is spent.
    cp = home.ctl("eval", "create", "--skip-validation")
    assert cp.returncode == ExitCode.NOT_INTERACTIVE, cp.stderr
    assert "at most $" in cp.stderr and model.replies == 0
    assert events(home, "eval.started") == []
    base = ("create", tool, "--from", source, "--llm", "--skip-validation", "--json")
    cp = home.ctl(*base, "--repairs", "0")
    error = json.loads(cp.stdout)["error"]  # --json: the error is JSON on stdout
    assert cp.returncode == error["exit_code"] != 0 and "after 0 repairs" in error["message"]
    cp = home.ctl(*base, "--repairs", "1")
    assert cp.returncode == 0, cp.stderr
    res = json.loads(cp.stdout)
    assert (res["repairs"], res["max_repairs"]) == (1, 1)
    (failed,) = events(home, "generation.failed")
    (completed,) = events(home, "generation.completed")
    assert (failed["payload"]["max_repairs"], failed["payload"]["repairs"]) == (0, 0)
    assert (completed["payload"]["max_repairs"], completed["payload"]["repairs"]) == (1, 1)

    # A corpus of the first 8 tools, in a directory: each run reserves its worst case
    # (about $0.19 with no repairs), so a $0.3 cap holds the first and stops a later one.
    corpus = {"format": 1, "name": "eight", "items": items[:8]}
    (tmp_path / "corpus.json").write_text(json.dumps(corpus))
    res = eval_json(home, "--corpus", str(tmp_path), "--repairs", "0", "--max-usd", "0.3")
    measured = res["figures"]["items"]
    assert res["reason"] == "max_usd" and 0 < measured < 8 and res["corpus"] == "eight"
    evaluated = events(home, "eval.item", session=res["run"])
    assert len(evaluated) == measured + 1 and evaluated[-1]["payload"]["measured"] is False
    # Every dollar the ledger counts is one the fake billed, and no more than the cap.
    bill = model.bill_usd(INPUT_PRICE, OUTPUT_PRICE)
    turns = events(home, "llm.turn")
    assert abs(sum(e["payload"]["cost_usd"] for e in turns) - bill) < 1e-9
    spent_by_eval = sum(e["payload"]["run_cost_usd"] for e in evaluated)
    (done,) = events(home, "eval.completed", session=res["run"])
    assert abs(done["payload"]["spent_usd"] - spent_by_eval) < 1e-9
    assert abs(res["spent_usd"] - spent_by_eval) < 1e-9 and spent_by_eval <= 0.3
    # the creates before the eval are the rest of the bill
    assert abs(bill - spent_by_eval - (5 + 6) * 0.0075) < 1e-9

    replay_a_recorded_run(home, model, items, tmp_path)


def replay_a_recorded_run(
    home: Tsuku, model: AnsweringAnthropic, items: list[dict[str, Any]], tmp_path: Path
) -> None:
    """A run recorded (``TSUKU_LLM_RECORD_DIR``) and replayed with ``--replay``: the
    model is not asked again and the figures are the recorded run's; then, with one
    item's recording made under another prompt, that item is reported as "recording
    does not match" and not scored, and the others still are."""
    import hashlib

    import msgspec

    def first_wrong(i: dict[str, Any]) -> bool:
        return str(i["source"]).removeprefix("github:").lower() in model.wrong_first

    wrong = next(i for i in items if first_wrong(i))
    right = [i for i in items if not first_wrong(i)][:2]
    three = tmp_path / "three"
    three.mkdir()
    chosen = [wrong, *right]
    (three / "corpus.json").write_text(json.dumps({"format": 1, "name": "three", "items": chosen}))
    rec = tmp_path / "recording"
    args = ("--corpus", str(three), "--repairs", "0")
    recorded = eval_json(home, *args, shell_env={"TSUKU_LLM_RECORD_DIR": str(rec)})
    f = recorded["figures"]
    assert (f["items"], f["passed"], f["failures"]) == (3, 2, {"static_check": 1})

    asked = model.replies
    before = home.call("status")["budget"]
    replayed = eval_json(home, *args, "--replay", str(rec))
    assert model.replies == asked  # every answer came from the recording
    assert replayed["replay"] == str(rec) and replayed["recording_mismatches"] == []
    g = replayed["figures"]
    same = ("items", "passed", "failures", "turns_total", "cost_total_usd")
    assert {k: g[k] for k in same} == {k: f[k] for k in same}
    replays_spend_nothing(home, replayed, before)

    # One right item's recordings as if made under an older system prompt: its request
    # now is not in the recording.
    tool, repo = right[0]["tool"], right[0]["source"].removeprefix("github:")
    for path in rec.glob("*.json"):
        data = json.loads(path.read_text())
        if f"Repository: {repo}" not in json.dumps(data["request"]):
            continue
        data["request"]["system"] = "You write tsuku recipes (an older prompt)."
        key = hashlib.sha256(msgspec.json.encode(data["request"], order="sorted")).hexdigest()
        data["key"] = key
        path.unlink()
        (rec / f"{key}.json").write_text(json.dumps(data))
    cp = home.ctl("eval", "create", *args, "--replay", str(rec), "--skip-validation", "--yes")
    assert cp.returncode == 0, cp.stderr
    assert model.replies == asked
    assert f"{tool}: recording does not match, not scored: no recording for request" in cp.stdout
    assert "closest recording is" in cp.stdout and "first difference: line" in cp.stdout
    assert "success rate: 50.0 % (1 of 2)" in cp.stdout, cp.stdout
    assert f"{tool}: recording does not match (not scored)" in cp.stderr
    replays_leave_the_policy_alone(home, model, args, rec, right[1])


def replays_leave_the_policy_alone(
    home: Tsuku,
    model: AnsweringAnthropic,
    args: tuple[str, ...],
    rec: Path,
    item: dict[str, Any],
) -> None:
    """A replay asks no provider: Claude's open breaker neither refuses it nor is
    closed by it, and it takes no slot of an hourly limit that is full (one recording
    misses: its failure is not counted against Claude either)."""
    hold = {"TSUKU_BREAKER_RESET_SECONDS": "3600"}
    for _ in range(3):  # overloaded three times in a row: the circuit opens
        model.error(529, "overloaded_error", "Overloaded", headers={"retry-after": "0"})
    cp = home.ctl("llm", "test", "--yes", shell_env=hold)
    assert cp.returncode != 0 and "Overloaded" in cp.stderr, cp.stderr

    def claude() -> dict[str, Any]:
        status = home.call("status")
        (shown,) = [b for b in status["breakers"] if b["scope"] == "claude"]
        return {"breaker": shown, "generations": status["generations"]}

    before = claude()
    assert before["breaker"]["state"] == "open", before
    full = {**hold, "TSUKU_LLM_HOURLY_LIMIT": str(before["generations"]["count"])}
    asked = model.replies
    cp = home.ctl(
        "eval", "create", *args, "--replay", str(rec), "--skip-validation", "--yes", shell_env=full
    )
    assert cp.returncode == 0, cp.stderr
    assert "success rate: 50.0 % (1 of 2)" in cp.stdout, cp.stdout
    assert model.replies == asked
    assert claude() == before  # still open, same streak, not one more generation counted
    # the hour is full for a real generation: the limit still holds what it bounds
    real = ("create", item["tool"], "--from", item["source"], "--llm", "--skip-validation")
    cp = home.ctl(*real, "--yes", shell_env=full)
    assert cp.returncode == ExitCode.RATE_LIMITED, cp.stderr


def replays_spend_nothing(home: Tsuku, replayed: dict[str, Any], before: dict[str, Any]) -> None:
    """A replayed run's turns are on the ledger as replayed, at no cost, their recorded
    cost kept apart: the day's budget (spent, reserved) is what it was before, and is
    the same once the daemon rebuilt it from the events at its next start."""
    cost = replayed["figures"]["cost_total_usd"]
    assert replayed["spent_usd"] == 0 and cost > 0
    sessions = {e["payload"]["session"] for e in events(home, "eval.item", session=replayed["run"])}
    turns = [e["payload"] for e in events(home, "llm.turn") if e["session"] in sessions]
    assert len(turns) == replayed["figures"]["turns_total"] > 0
    assert all(t["replayed"] is True and t["cost_usd"] == 0 for t in turns)
    assert abs(sum(t["replayed_cost_usd"] for t in turns) - cost) < 1e-9
    for settled in events(home, "budget.settled"):
        if settled["session"] in sessions:
            assert settled["payload"]["actual_usd"] == 0 == settled["payload"]["reserved_usd"]
    after = home.call("status")["budget"]
    assert (after["spent_usd"], after["reserved_usd"]) == (before["spent_usd"], 0)
    assert abs(after["replayed_usd"] - before["replayed_usd"] - cost) < 1e-6
    shown = home.ctl("status", check=True).stdout
    assert f"replayed: {money(after['replayed_usd'])} not spent" in shown, shown
    # The ledger's summary counts no replayed dollar as spent, and says them apart.
    summary = json.loads(home.ctl("events", "summary", "--json", check=True).stdout)
    assert abs(summary["replayed_usd"] - after["replayed_usd"]) < 1e-6
    assert abs(summary["totals"]["cost_usd"] - after["spent_usd"]) < 1e-6
    assert summary["totals"]["cost_unknown"] == 0
    table = home.ctl("events", "summary", check=True).stdout
    assert f"replayed: {money(summary['replayed_usd'])} not spent" in table, table
    home.stop_all()
    home.start()
    rebuilt = home.call("status")["budget"]
    assert {k: rebuilt[k] for k in ("spent_usd", "reserved_usd", "replayed_usd")} == {
        k: after[k] for k in ("spent_usd", "reserved_usd", "replayed_usd")
    }
