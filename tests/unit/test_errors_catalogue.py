"""The error catalogue is the one home of every code: the classes, the docs and the
client's exit-code lookup all agree with it."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import tsukud
from tsukud.errors import (
    CATALOGUE,
    DaemonUnavailable,
    ExitCode,
    InvalidParams,
    TsukuError,
    all_error_classes,
    exit_code_for,
)

REPO = Path(__file__).resolve().parents[2]
_ROW = re.compile(r"^\|\s*`([a-z_]+)`\s*\|\s*(\d+)\s*\|(.*)\|\s*$")


def _import_every_module() -> None:
    for info in pkgutil.walk_packages(tsukud.__path__, "tsukud."):
        importlib.import_module(info.name)


def _daemon_error_classes() -> list[type[TsukuError]]:
    _import_every_module()
    return [c for c in all_error_classes() if c.__module__.startswith("tsukud.")]


def _documented_codes() -> dict[str, tuple[int, bool]]:
    """``schema/rpc.md``'s error tables: code → (exit code, marked retryable)."""
    text = (REPO / "schema" / "rpc.md").read_text()
    section = text[text.index("## Error codes") : text.index("## Methods")]
    rows: dict[str, tuple[int, bool]] = {}
    for line in section.splitlines():
        m = _ROW.match(line)
        if m:
            assert m.group(1) not in rows, f"{m.group(1)} is documented twice"
            rows[m.group(1)] = (int(m.group(2)), "retryable" in m.group(3))
    return rows


def test_every_code_in_use_is_in_the_catalogue_and_every_entry_is_used() -> None:
    in_use = {c.code for c in _daemon_error_classes()}
    assert len(in_use) > 80
    assert in_use == set(CATALOGUE)


def test_every_class_takes_exit_code_retryable_and_hint_from_its_entry() -> None:
    for cls in _daemon_error_classes():
        kind = CATALOGUE[cls.code]
        got = (cls.exit_code, cls.retryable, cls.default_hint)
        assert got == (kind.exit_code, kind.retryable, kind.hint), cls


def test_schema_rpc_md_documents_every_code_with_its_exit_code_and_retryability() -> None:
    documented = _documented_codes()
    assert set(documented) == set(CATALOGUE)
    for code, kind in CATALOGUE.items():
        assert documented[code] == (kind.exit_code, kind.retryable), code


def test_docs_exit_codes_md_names_every_exit_code() -> None:
    text = (REPO / "docs" / "exit-codes.md").read_text()
    documented = {
        int(m.group(1)): m.group(2) for m in re.finditer(r"^\| (\d+) \| (\w+) \|", text, re.M)
    }
    names = {v: k for k, v in vars(ExitCode).items() if k.isupper()}
    assert documented == names
    assert {kind.exit_code for kind in CATALOGUE.values()} <= set(documented)


def test_an_unknown_code_fails_at_class_definition() -> None:
    with pytest.raises(TypeError, match=r"'no_such_code' is not in tsukud\.errors\.CATALOGUE"):

        class Stray(TsukuError):
            code = "no_such_code"


@pytest.mark.parametrize("attr", ["exit_code", "retryable", "default_hint"])
def test_a_class_cannot_set_what_the_catalogue_owns(attr: str) -> None:
    with pytest.raises(TypeError, match=f"sets {attr}"):
        type("Drifting", (TsukuError,), {"code": "usage", attr: 1})


def test_a_subclass_without_a_code_inherits_its_parents_entry() -> None:
    class Narrower(InvalidParams):
        pass

    assert Narrower("x").to_wire() == {
        "code": "invalid_params",
        "message": "x",
        "hint": CATALOGUE["invalid_params"].hint,
        "exit_code": ExitCode.PROTOCOL,
        "retryable": False,
    }


def test_exit_code_for_knows_codes_of_modules_the_client_never_imports() -> None:
    # tsukuctl imports only tsukud.errors; the catalogue still knows discovery's codes.
    assert exit_code_for("discovery_denied") == ExitCode.USER_DECLINED
    assert exit_code_for("sandbox_unavailable") == ExitCode.SANDBOX
    assert exit_code_for("what") == ExitCode.GENERAL


def test_daemon_unavailable_hints_say_what_a_user_runs() -> None:
    hint = DaemonUnavailable("tsukud closed the connection").hint
    assert "tsukuctl daemon start" in hint and "tsukud --foreground" not in hint


def test_a_hint_pointing_at_a_runs_events_is_runnable_and_names_the_run_once_known() -> None:
    """Issue 29, point 1: no literal `<id>`; the default hint runs as written, and the
    error of a run with a known session names exactly that session."""
    from tsukud.errors import RUNS_EVENTS
    from tsukud.generation.errors import GenerationFailed
    from tsukud.validation.errors import ValidationFailed

    for cls in (GenerationFailed, ValidationFailed):
        error = cls("no")
        assert "<" not in error.hint and f"`{RUNS_EVENTS}`" in error.hint
        assert error.in_session("create-0123abcd") is error
        assert "`tsukuctl events --session create-0123abcd`" in error.hint
        assert error.to_wire()["data"] == {"session": "create-0123abcd"}
    for entry in CATALOGUE.values():
        assert "<id>" not in entry.hint
