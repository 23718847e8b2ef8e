"""The answers typed in issue 27 (item 4) go on the wire as the objects they replaced:
the same keys in the same order, and a key that only some answers carried is absent
from the others, not null (schema/rpc.md). Encoded by the one frame encoder the RPC
server uses."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from tsukud.batch.results import BatchStatus, Deferral, FailureExample, FailureGroup, RunningJob
from tsukud.discover.model import PackageMatch, Probe, SearchAnswer
from tsukud.hooks.service import IgnoredClaim, IndexBuilt
from tsukud.install.results import RegistryUpdated
from tsukud.policy.breaker import BreakerShown
from tsukud.policy.budget import BudgetShown
from tsukud.policy.ratelimit import HourShown
from tsukud.rpc.control import (
    DaemonStatus,
    LedgerShown,
    ProblemShown,
    SettingShown,
    SlotsShown,
)
from tsukud.rpc.llm_methods import NeverTripped
from tsukud.rpc.protocol import HEADER, encode_frame
from tsukud.sandbox.service import SandboxStatus


def _wire(obj: object) -> Any:
    frame = encode_frame({"id": 1, "result": obj})
    return json.loads(frame[HEADER.size :])["result"]


def _breaker(**extra: Any) -> BreakerShown:
    return BreakerShown(
        scope="claude",
        provider="claude",
        state="open",
        consecutive_failures=3,
        retry_at="2026-01-01T00:01:00Z",
        last_error="boom",
        **extra,
    )


def _status(origins: Any) -> DaemonStatus:
    return DaemonStatus(
        version="0.1",
        pid=7,
        uptime_s=1.5,
        started_at=1.0,
        socket=None,
        activation="direct",
        home="/h",
        database="/h/state/events.db",
        budget=BudgetShown(
            day="2026-01-01",
            spent_usd=0.5,
            reserved_usd=0.0,
            daily_budget_usd=5.0,
            confirm_threshold_usd=1.0,
        ),
        generations=HourShown(count=2, limit=20),
        breakers=[_breaker()],
        events=LedgerShown(
            count=9,
            durable=9,
            disk_full=False,
            ledger="sqlite",
            unreachable=None,
            origin=None,
            origins=origins,
        ),
        sandbox=SlotsShown(slots=2, busy=0),
        connections=1,
        settings=[SettingShown(key="llm.x", value=None, set=False, secret=True, source="default")],
        problems=[ProblemShown(message="bad", hint="fix it")],
    )


def test_status_is_the_object_it_always_was() -> None:
    wire = _wire(_status(msgspec.UNSET))
    assert list(wire) == [
        "version",
        "pid",
        "uptime_s",
        "started_at",
        "socket",
        "activation",
        "home",
        "database",
        "budget",
        "generations",
        "breakers",
        "events",
        "sandbox",
        "connections",
        "settings",
        "problems",
    ]
    assert wire["budget"] == {
        "day": "2026-01-01",
        "spent_usd": 0.5,
        "reserved_usd": 0.0,
        "replayed_usd": 0.0,  # priced turns a recording answered: never spent
        "daily_budget_usd": 5.0,
        "confirm_threshold_usd": 1.0,
    }
    assert wire["generations"] == {"count": 2, "limit": 20}
    # One daemon's ledger: no origins key at all, and a local circuit has no probe owner.
    assert wire["events"] == {
        "count": 9,
        "durable": 9,
        "disk_full": False,
        "ledger": "sqlite",
        "unreachable": None,
        "origin": None,
    }
    assert list(wire["breakers"][0]) == [
        "scope",
        "provider",
        "state",
        "consecutive_failures",
        "retry_at",
        "last_error",
    ]
    assert wire["sandbox"] == {"slots": 2, "busy": 0}
    assert wire["settings"] == [
        {"key": "llm.x", "value": None, "set": False, "secret": True, "source": "default"}
    ]
    assert wire["problems"] == [{"message": "bad", "hint": "fix it"}]


def test_a_shared_ledger_s_status_names_the_origins_and_the_probe_owner() -> None:
    team = [{"origin": "a-1", "events": 3, "role": "writer"}]
    assert _wire(_status(team))["events"]["origins"] == team
    assert _wire(_breaker(probe_owner=None))["probe_owner"] is None


def test_a_provider_that_never_failed_shows_only_a_closed_breaker() -> None:
    assert _wire(NeverTripped()) == {"state": "closed", "consecutive_failures": 0}


def test_batch_status_is_the_object_it_always_was() -> None:
    status = BatchStatus(
        counts={"queued": 1, "failed": 1},
        total=3,
        remaining=1,
        failures=[
            FailureGroup(
                category="x",
                count=1,
                backoff=0,
                examples=[FailureExample(tool="t", source="npm:t", message="m")],
            )
        ],
        deferred=[Deferral(reason="budget", count=1)],
        running=[RunningJob(job="j1", tool="u", source="npm:u", fence=2, attempt=1)],
        active_run=None,
        spent_usd=0.0,
        stale_commits=0,
    )
    assert _wire(status) == {
        "counts": {"queued": 1, "failed": 1},
        "total": 3,
        "remaining": 1,
        "failures": [
            {
                "category": "x",
                "count": 1,
                "backoff": 0,
                "examples": [{"tool": "t", "source": "npm:t", "message": "m"}],
            }
        ],
        "deferred": [{"reason": "budget", "count": 1}],
        "running": [{"job": "j1", "tool": "u", "source": "npm:u", "fence": 2, "attempt": 1}],
        "active_run": None,
        "spent_usd": 0.0,
        "stale_commits": 0,
    }


def test_sandbox_status_sends_only_what_its_answer_has() -> None:
    down = SandboxStatus(available=False, error="no socket", hint=None, image="img")
    assert _wire(down) == {"available": False, "error": "no socket", "hint": None, "image": "img"}
    chosen = SandboxStatus(
        available=True,
        endpoint="unix:///d.sock",
        version="Docker 27",
        image="img",
        image_present=True,
        chosen_by="the sandbox.docker_host setting (DOCKER_HOST)",
    )
    assert list(_wire(chosen)) == [
        "available",
        "endpoint",
        "version",
        "image",
        "image_present",
        "chosen_by",
    ]
    found = _wire(
        SandboxStatus(
            available=True,
            endpoint="unix:///p.sock",
            version="Podman 5",
            image="img",
            image_present=False,
            chosen_by="the first of Podman's, then Docker's sockets that answers",
            passed_over=["unix:///gone.sock"],
        )
    )
    assert found["passed_over"] == ["unix:///gone.sock"]


def test_search_s_packages_are_their_probe_with_from_and_the_filter() -> None:
    probe = Probe(builder="crates", source="rgx", downloads=5000, repository="a/rgx")
    answer = SearchAnswer(
        tool="rgx",
        recipe=None,
        registry_entry=None,
        packages=[
            PackageMatch(
                builder="crates",
                source="rgx",
                downloads=5000,
                repository="a/rgx",
                from_="crates:rgx",
                passes_filter=True,
            )
        ],
        did_you_mean=None,
        errors={},
        install_would="show these packages",
    )
    wire = _wire(answer)
    # What the probe left at its defaults stays out, as msgspec.to_builtins(probe) did.
    assert wire["packages"] == [{**_wire(probe), "from": "crates:rgx", "passes_filter": True}]
    assert list(wire) == [
        "tool",
        "recipe",
        "registry_entry",
        "packages",
        "did_you_mean",
        "errors",
        "install_would",
    ]


def test_registry_update_and_reindex_are_the_objects_they_always_were() -> None:
    updated = RegistryUpdated(
        manifest_url="m",
        registry_url="r",
        recipes_listed=1,
        generated_at=None,
        refreshed=["stern"],
        removed=[],
        failed={"x": "why"},
    )
    assert _wire(updated) == {
        "manifest_url": "m",
        "registry_url": "r",
        "recipes_listed": 1,
        "generated_at": None,
        "refreshed": ["stern"],
        "removed": [],
        "failed": {"x": "why"},
    }
    built = IndexBuilt(
        ignored_claims=[IgnoredClaim(command="k", tool="kubectl-x", source="local", owner="k")],
        ambiguous=0,
        path="/h/share/binary-index.tsv",
        entries=1,
        commands=1,
        tools=1,
        by_source={"installed": 0, "local": 1, "registry": 0},
        built_at=1.0,
        duration_ms=0.5,
        recipe_errors={},
    )
    assert "manifest" not in _wire(built)  # a background rebuild's, as before
    wire = _wire(msgspec.structs.replace(built, manifest="cached"))
    assert wire["manifest"] == "cached"
    assert wire["ignored_claims"] == [
        {"command": "k", "tool": "kubectl-x", "source": "local", "owner": "k"}
    ]


def test_a_listed_event_is_the_object_it_always_was_origin_only_when_shared() -> None:
    from tsukud.rpc.methods import _events_chunk

    row = [7, "2026-01-01T00:00:00Z", "client.note", None, '{"text":"hi"}', "ab"]
    assert bytes(_events_chunk([row])) == (
        b'{"events":[{"id":7,"ts":"2026-01-01T00:00:00Z","type":"client.note",'
        b'"session":null,"payload":{"text":"hi"},"hash":"ab"}]}'
    )
    shared = json.loads(bytes(_events_chunk([[*row, "o-1", 3]])))
    assert shared["events"][0] == {
        "id": 7,
        "ts": "2026-01-01T00:00:00Z",
        "type": "client.note",
        "session": None,
        "payload": {"text": "hi"},
        "hash": "ab",
        "origin": "o-1",
        "seq": 3,
    }


def test_a_summary_has_keyless_totals_and_a_rest_only_past_top() -> None:
    from tsukud.events.summary import _answer

    sums = {None: [1, 0, 0, 0, 0, 0, 0], "s": [2, 1, 10, 5, 3_000_000_000, 0, 0]}
    whole = _wire(_answer("session", sums, [None, "s"], "raw", 10))
    # no rest: all listed
    assert list(whole) == ["by", "groups", "totals", "source", "replayed_usd"]
    assert whole["groups"][0] == {
        "key": None,  # events without a session are a group of their own
        "events": 1,
        "llm_turns": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": 0.0,
        "cost_estimated_usd": 0.0,
        "cost_unknown": 0,
    }
    assert "key" not in whole["totals"] and whole["totals"]["events"] == 3
    capped = _wire(_answer("session", sums, [None, "s"], "raw", 1))
    assert [g["key"] for g in capped["groups"]] == ["s"]
    unkeyed = {k: v for k, v in whole["groups"][0].items() if k != "key"}
    assert capped["rest"] == {**unkeyed, "groups": 1}
    assert list(capped["rest"])[-1] == "groups"
