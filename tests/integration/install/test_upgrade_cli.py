"""`tsukuctl outdated` and `tsukuctl upgrade` against a real daemon and the fake GitHub."""

from __future__ import annotations

import json

from tests.conftest import Tsuku
from tests.fakes.github import FakeGitHub
from tests.integration.install.conftest import events, installed, tree
from tsukud.errors import ExitCode, exit_code_for
from tsukud.install.upgrades import compare


def test_compare_follows_version_precedence() -> None:
    assert compare("age", "1.1.1", "1.2.1").outdated
    assert compare("age", "1.9.0", "1.10.0").outdated
    assert not compare("age", "1.2.1", "1.2.1").outdated
    assert not compare("age", "1.3.0", "1.2.1").outdated  # a newer local build is not behind
    assert compare("x", "2.0.0-rc.1", "v2.0.0").outdated


def test_outdated_table_json_and_cache(inst: Tsuku, world: FakeGitHub) -> None:
    cp = inst.ctl("outdated", check=True)
    assert cp.stdout.strip() == "no tools installed"
    inst.ctl("install", "age@1.1.1", check=True)
    inst.ctl("install", "kind", check=True)

    cp = inst.ctl("outdated")
    assert cp.returncode == 0, cp.stderr  # a question, not a check
    lines = cp.stdout.splitlines()
    assert lines[0].split() == ["TOOL", "INSTALLED", "NEWEST", "STATE"]
    assert lines[1].split() == ["age", "1.1.1", "1.2.1", "upgrade", "available"]
    assert lines[2].split() == ["kind", "2.5.0", "2.5.0", "current"]
    assert lines[3] == "1 outdated: `tsukuctl upgrade age` (or --all)"

    # The newest release comes from the releases page create reads (one rule for both).
    latest_requests = len(world.requests_to("/releases?per_page=10"))
    res = json.loads(inst.ctl("outdated", "--json", "age", check=True).stdout)
    assert res == {
        "tools": [
            {
                "tool": "age",
                "installed": "1.1.1",
                "newest": "1.2.1",
                "outdated": True,
                "error": None,
                "error_code": None,
                "pinned": False,  # its recipe has a version source
                "validated": None,  # the registry's recipe, written by people
                "needs_validation": False,
                "hint": None,
            }
        ]
    }
    assert latest_requests and len(world.requests_to("/releases?per_page=10")) == latest_requests

    cp = inst.ctl("outdated", "stern")
    assert cp.returncode == ExitCode.GENERAL and "stern is not installed" in cp.stderr


def test_upgrade_named_and_all(inst: Tsuku) -> None:
    inst.ctl("install", "age@1.1.1", check=True)
    inst.ctl("install", "kind@2.4.1", check=True)

    cp = inst.ctl("upgrade")
    assert cp.returncode == ExitCode.USAGE and "--all" in cp.stderr

    cp = inst.ctl("upgrade", "age", check=True)
    assert cp.stdout.strip() == "upgraded age 1.1.1 → 1.2.1"
    assert "resolving age" in cp.stderr  # the install's progress lines
    assert installed(inst)["age"]["version"] == "1.2.1"
    assert installed(inst)["kind"]["version"] == "2.4.1"

    res = json.loads(inst.ctl("upgrade", "--all", "--json", check=True).stdout)
    assert [(u["tool"], u["from"], u["to"]) for u in res["upgraded"]] == [
        ("kind", "2.4.1", "2.5.0")
    ]
    assert res["current"] == [{"tool": "age", "version": "1.2.1"}] and res["failed"] == []
    assert tree(inst.home) == [
        "tools/age-1.2.1",
        "tools/kind-2.5.0",
        "bin/age",
        "bin/age-keygen",
        "bin/kind",
    ]

    cp = inst.ctl("upgrade", "--all", check=True)
    assert cp.stdout.strip() == "nothing to upgrade: every tool named is current"

    # An upgrade is an install: its own session with started/completed events.
    completed = [e for e in events(inst) if e["type"] == "install.completed"]
    assert [e["payload"]["version"] for e in completed] == ["1.1.1", "2.4.1", "1.2.1", "2.5.0"]
    assert completed[-1]["session"] == res["upgraded"][0]["session"]


def test_a_failed_upgrade_keeps_the_old_version(inst: Tsuku, world: FakeGitHub) -> None:
    inst.ctl("install", "age@1.1.1", check=True)
    inst.ctl("install", "kind@2.4.1", check=True)
    world.override(r"/releases/download/v1\.2\.1/", status=404, role="web")

    cp = inst.ctl("upgrade", "--all")
    assert cp.returncode == ExitCode.PARTIAL_FAILURE  # some of several: as install a b
    assert "upgraded kind 2.4.1 → 2.5.0" in cp.stdout
    assert "tsukuctl: age was not upgraded: " in cp.stderr
    versions = {k: v["version"] for k, v in installed(inst).items()}
    assert versions == {"age": "1.1.1", "kind": "2.5.0"}
    assert (inst.home / "bin" / "age").resolve().parent.parent.name == "age-1.1.1"
    failed = [e for e in events(inst) if e["type"] == "install.failed"]
    assert [(e["payload"]["tool"], e["payload"]["version"]) for e in failed] == [("age", "1.2.1")]

    # Every tool named failed the same way: that failure's own exit code, as install's.
    cp = inst.ctl("upgrade", "age", "--json")
    (why,) = json.loads(cp.stdout)["failed"]
    assert why["error_code"] and exit_code_for(why["error_code"]) != ExitCode.GENERAL
    assert cp.returncode == exit_code_for(why["error_code"]), cp.stderr
