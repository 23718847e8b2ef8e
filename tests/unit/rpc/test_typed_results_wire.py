"""The installer's typed results go on the wire as the objects they replaced: every
field present (``null`` included), the same keys (schema/rpc.md, ``tools.remove`` and
``tools.verify``), through the one frame encoder the RPC server uses."""

from __future__ import annotations

import json

import msgspec

from tsukud.install.results import Removed, Verified
from tsukud.rpc.protocol import HEADER, encode_frame


def _wire(obj: object) -> dict[str, object]:
    frame = encode_frame({"id": 1, "result": obj})
    body = json.loads(frame[HEADER.size :])
    result: dict[str, object] = body["result"]
    return result


def test_removed_is_the_object_tools_remove_always_sent() -> None:
    removed = Removed(
        tool="kind",
        version=None,
        removed_links=["/h/bin/kind"],
        install_dir="/h/tools/kind-0.1",
        session="remove-1",
        unneeded_dependencies=[],
    )
    assert _wire(removed) == {
        "tool": "kind",
        "version": None,
        "removed_links": ["/h/bin/kind"],
        "install_dir": "/h/tools/kind-0.1",
        "session": "remove-1",
        "unneeded_dependencies": [],
        "also_removed": [],
    }


def test_verified_is_the_object_tools_verify_always_sent() -> None:
    verified = Verified(
        tool="kind", version="0.1", ok=True, binaries=["kind"], output=None, session="verify-1"
    )
    assert _wire(verified) == {
        "tool": "kind",
        "version": "0.1",
        "ok": True,
        "binaries": ["kind"],
        "output": None,
        "session": "verify-1",
    }


def test_a_batch_run_s_summary_is_the_object_batch_run_always_sent() -> None:
    from tsukud.flows.batch_run import RunSummary

    summary = RunSummary(
        run="r1",
        reason="finished",
        workers=2,
        done=3,
        failed=1,
        deferred=0,
        requeued=0,
        stale_commits=0,
        waiting_on_breakers={},
        remaining=0,
        backoff=0,
        counts={"queued": 0, "done": 3},
        spent_usd=0.0,
        duration_ms=12,
        rate_per_min=1.5,
    )
    wire = _wire(summary)
    assert list(wire) == [
        "run",
        "reason",
        "workers",
        "done",
        "failed",
        "deferred",
        "requeued",
        "stale_commits",
        "waiting_on_breakers",
        "remaining",
        "backoff",
        "counts",
        "spent_usd",
        "duration_ms",
        "rate_per_min",
    ]
    stopped = msgspec.to_builtins(summary.stopped_event())
    assert stopped == {k: wire[k] for k in stopped}
    assert list(stopped) == [
        "run",
        "reason",
        "done",
        "failed",
        "deferred",
        "remaining",
        "spent_usd",
        "duration_ms",
    ]


def test_an_install_of_what_is_there_sends_only_where_it_is() -> None:
    from tsukud.install.results import Installed

    there = Installed(
        tool="age", version="1.2.1", already_installed=True, install_dir="/h/t", binaries=["age"]
    )
    wire = _wire(there)
    assert list(wire) == ["tool", "version", "already_installed", "install_dir", "binaries"]


def test_a_fresh_install_sends_every_field_in_order_nulls_included() -> None:
    from tsukud.install.results import Installed

    fresh = Installed(
        tool="age",
        version="1.2.1",
        tag=None,
        already_installed=False,
        install_dir="/h/t",
        binaries=["age"],
        links=["/h/bin/age"],
        assets=[],
        verify_output=None,
        replaced=None,
        relocation=None,
        removed_strays=[],
        session="install-1",
        timings_ms={"recipe": 1.0},
    )
    assert list(_wire(fresh)) == [
        "tool",
        "version",
        "tag",
        "already_installed",
        "install_dir",
        "binaries",
        "links",
        "assets",
        "verify_output",
        "replaced",
        "relocation",
        "removed_strays",
        "session",
        "timings_ms",
    ]
    assert _wire(fresh)["tag"] is None and _wire(fresh)["relocation"] is None


def test_info_of_a_broken_recipe_keeps_the_record_and_the_error_alone() -> None:
    from tsukud.install.results import ToolInfo

    assert _wire(ToolInfo(tool="age", installed={"version": "1"}, recipe_error="bad")) == {
        "tool": "age",
        "installed": {"version": "1"},
        "recipe_error": "bad",
    }
    assert _wire(ToolInfo(tool="age", installed=None, recipe_error="bad"))["installed"] is None


def test_info_sends_a_recipe_s_missing_description_as_null() -> None:
    from tsukud.install.results import ToolInfo, VerifyCommand

    info = ToolInfo(
        tool="age",
        installed=None,
        name="age",
        description=None,
        homepage=None,
        recipe_source="local",
        recipe_path="/r/age.toml",
        recipe_sha256="ab",
        recipe_stale=False,
        platform="linux/amd64",
        supported=False,
        unsupported_reason="no steps for linux/amd64",
        verify=VerifyCommand(command="age --version", pattern=None),
    )
    wire = _wire(info)
    assert list(wire) == [
        "tool",
        "installed",
        "name",
        "description",
        "homepage",
        "recipe_source",
        "recipe_path",
        "recipe_sha256",
        "recipe_stale",
        "platform",
        "supported",
        "unsupported_reason",
        "verify",
    ]
    assert wire["description"] is None
    assert wire["verify"] == {"command": "age --version", "pattern": None}


def test_an_upgrade_names_the_old_version_from_and_a_hint_only_when_there_is_one() -> None:
    from msgspec import UNSET

    from tsukud.install.results import Current, NotUpgraded, Upgraded, Upgrades

    done = Upgrades(
        upgraded=[Upgraded(tool="age", from_="1.0", to="1.1", session="install-1")],
        current=[
            Current(tool="kind", version="0.2", pinned=True),
            Current(tool="jq", version="1.7", pinned=UNSET),
        ],
        failed=[
            NotUpgraded(tool="x", error_code="not_found", message="gone"),
            NotUpgraded(tool="y", error_code="version_not_validated", message="m", hint="h"),
        ],
    )
    assert _wire(done) == {
        "upgraded": [{"tool": "age", "from": "1.0", "to": "1.1", "session": "install-1"}],
        "current": [
            {"tool": "kind", "version": "0.2", "pinned": True},
            {"tool": "jq", "version": "1.7"},
        ],
        "failed": [
            {"tool": "x", "error_code": "not_found", "message": "gone"},
            {"tool": "y", "error_code": "version_not_validated", "message": "m", "hint": "h"},
        ],
    }


STARTED = [  # what every eval.started records (events/catalogue.py EvalRunStarted)
    "run",
    "corpus",
    "corpus_hash",
    "items",
    "provider",
    "model",
    "prompt_version",
    "max_usd",
    "worst_case_usd",
]


def test_an_eval_create_report_is_the_started_payload_then_how_it_ended() -> None:
    from tsukud.eval.figures import figures
    from tsukud.flows.eval_run import CreateEvalReport

    report = CreateEvalReport(
        run="eval-1",
        corpus="builtin",
        corpus_hash="h",
        items=0,
        provider="claude",
        model="m",
        prompt_version="p",
        repairs=2,
        skip_validation=False,
        max_usd=None,
        worst_case_usd=1.5,
        replay=None,
        reason="finished",
        spent_usd=0.0,
        figures=figures([]),
        recording_mismatches=[],
    )
    wire = _wire(report)
    assert list(wire) == [
        *STARTED,
        "repairs",
        "skip_validation",
        "replay",
        "reason",
        "spent_usd",
        "figures",
        "recording_mismatches",
    ]
    assert wire["max_usd"] is None and wire["replay"] is None
    assert wire["figures"]["items"] == 0 and "kind" not in wire


def test_an_eval_discover_report_says_its_kind() -> None:
    from tsukud.eval.figures import discover_figures
    from tsukud.flows.eval_discover import DiscoverEvalReport

    report = DiscoverEvalReport(
        run="eval-2",
        kind="discover",
        corpus="discover",
        corpus_hash="h",
        items=0,
        provider="claude",
        model=None,
        prompt_version="p",
        max_usd=1.0,
        worst_case_usd=None,
        reason="finished",
        spent_usd=0.0,
        figures=discover_figures([]),
    )
    wire = _wire(report)
    assert list(wire) == [*STARTED, "kind", "reason", "spent_usd", "figures", "not_scored"]
    assert wire["kind"] == "discover" and "repairs" not in wire


def test_discover_names_the_install_command_only_when_tsuku_can_run_it() -> None:
    from tsukud.discover.model import Discovered

    found = Discovered(
        tool="rg", session="d-1", stage="registry", builder="x", source="s", reason="r"
    )
    assert "tsuku_command" not in _wire(found)
    command = "tsukuctl install rg --from npm:rg"
    assert (
        _wire(Discovered(**{**msgspec.structs.asdict(found), "tsuku_command": command}))[
            "tsuku_command"
        ]
        == command
    )


def test_batch_add_sends_the_bad_lines_as_objects() -> None:
    from tsukud.batch.results import Added, QueuedSource
    from tsukud.batch.sources import BadLine

    added = Added(
        added=1,
        already_queued=[QueuedSource("rg", "github:BurntSushi/ripgrep")],
        duplicate_lines=[3],
        bad=[BadLine(line=2, text="x", error="no source")],
        queued=4,
    )
    assert _wire(added) == {
        "added": 1,
        "already_queued": [{"tool": "rg", "source": "github:BurntSushi/ripgrep"}],
        "duplicate_lines": [3],
        "bad": [{"line": 2, "text": "x", "error": "no source"}],
        "queued": 4,
    }


def test_events_verify_sends_a_shared_ledger_s_fields_only_on_one() -> None:
    from tsukud.rpc.methods import AnchorsChecked, ChainVerified, OriginChecked

    alone = ChainVerified(checked=3, head="ab", rollups="ok")
    assert _wire(alone) == {"ok": True, "checked": 3, "head": "ab", "rollups": "ok"}
    shared = ChainVerified(
        checked=3,
        head=None,
        origin="o1",
        origins=[OriginChecked("o1", 3, None)],
        anchors=AnchorsChecked(0),
        rollups="rebuilt",
        head_id=7,
    )
    assert _wire(shared) == {
        "ok": True,
        "checked": 3,
        "head": None,
        "origin": "o1",
        "origins": [{"origin": "o1", "checked": 3, "head": None}],
        "anchors": {"checked": 0},
        "rollups": "rebuilt",
        "head_id": 7,
    }


def test_a_listing_s_hint_is_sent_only_when_there_is_one() -> None:
    from tsukud.rpc.methods import Listed

    assert _wire(Listed(0)) == {"count": 0}
    assert _wire(Listed(0, "did you mean install.completed?"))["hint"].startswith("did")
