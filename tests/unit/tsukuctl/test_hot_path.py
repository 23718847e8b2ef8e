"""``tsukuctl status`` without argparse (issue 32): the hot command line is read by
``cli.hot_args`` into what argparse would have made of it, answers exactly as the
argparse path does, and pulls in no module that would bring the start-up cost back.
The real client against the daemon double of conftest; the import checks run a fresh
interpreter, since this process has long imported everything."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.unit.tsukuctl import test_cli
from tests.unit.tsukuctl.conftest import DaemonDouble, error, result
from tsukuctl import cli

REPO = Path(__file__).resolve().parents[3]

# The status of test_cli, with a setting and a problem (stderr), one not ASCII.
STATUS: dict[str, Any] = {
    **test_cli.STATUS,
    "settings": [{"key": "secrets.x", "secret": True, "set": False, "source": "default"}],
    "problems": [{"message": "config: \u00e9 is odd", "hint": "fix it"}],
}

HOT = [
    ["status"],
    ["status", "--json"],
    ["--no-start", "status"],
    ["--no-start", "status", "--json"],
]

# Lines that look close to a hot one but are argparse's to read (or to refuse).
NOT_HOT = [
    [],
    ["status", "--origin", "o1"],
    ["-q", "status"],
    ["status", "-v"],
    ["status", "--json", "--json"],
    ["--no-start", "--no-start", "status"],
    ["status", "--js"],  # an abbreviation argparse would accept
    ["status", "--help"],
    ["--help"],
    ["status", "extra"],
    ["statu"],
    ["status", "--no-start"],  # a top-level flag after the command: argparse refuses it
    ["events"],
    ["--json", "status"],
]


@pytest.mark.parametrize("argv", HOT)
def test_a_hot_line_reads_as_argparse_reads_it(argv: list[str]) -> None:
    hot = cli.hot_args(argv)
    assert hot is not None
    full = cli.build_parser("status").parse_args(argv)
    assert vars(hot) == vars(full)


@pytest.mark.parametrize("argv", NOT_HOT)
def test_any_other_line_is_left_to_argparse(argv: list[str]) -> None:
    assert cli.hot_args(argv) is None


def _both_paths(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """``tsukuctl ARGV`` read by the hot path, then by argparse (the hot path switched
    off): exit code, stdout and stderr of each."""
    hot_code = cli.main(argv)
    hot_out, hot_err = capsys.readouterr()
    with monkeypatch.context() as m:
        m.setattr(cli, "hot_args", lambda _argv: None)
        code = cli.main(argv)
    out, err = capsys.readouterr()
    return (hot_code, hot_out, hot_err), (code, out, err)


@pytest.mark.parametrize("argv", HOT)
@pytest.mark.parametrize(
    "reply",
    [
        result(STATUS),
        error("ledger_corrupt", "the ledger's chain breaks at event 7", 26, "Run doctor."),
        error("internal", "boom", 1),
    ],
    ids=["answer", "error-with-hint", "error"],
)
def test_the_hot_path_answers_as_the_argparse_path_does(
    argv: list[str],
    reply: Any,
    daemon: DaemonDouble,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    daemon.replies["status"] = reply
    hot, full = _both_paths(argv, capsys, monkeypatch)
    assert hot == full
    assert daemon.methods() == ["status", "status"]
    if "--json" in argv and hot[0] == 0:
        assert json.loads(hot[1]) == STATUS


def test_without_a_daemon_both_paths_say_the_same(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    hot, full = _both_paths(["--no-start", "status", "--json"], capsys, monkeypatch)
    assert hot == full and hot[0] == 20 and json.loads(hot[1])["error"]["hint"]


# What `status` must not import: each alone costs a large share of `python -c pass`
# (argparse and json bring `re`; socket, enum; typing, collections) or is the daemon's.
HEAVY = ("argparse", "re", "json", "socket", "enum", "typing", "collections", "functools")
DAEMON_SIDE = ("trio", "msgspec", "structlog", "sqlite3")


def _loaded_by(argv: list[str], env: dict[str, str]) -> tuple[int, list[str], str]:
    code = (
        "import sys; before = set(sys.modules); from tsukuctl import cli; "
        f"rc = cli.main({argv!r}); "
        "print(rc, ' '.join(sorted(set(sys.modules) - before)), file=sys.stderr)"
    )
    cp = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO
    )
    *said, last = cp.stderr.splitlines() or [""]
    rc, _, names = last.partition(" ")
    return int(rc), names.split(), cp.stdout + "\n".join(said)


@pytest.mark.parametrize(
    ("argv", "reply"),
    [
        (["status"], result(STATUS)),
        (["status", "--json"], result(STATUS)),
        (["status"], error("internal", "boom", 1, "See the logs.")),
        (["status", "--json"], error("internal", "boom", 1, "See the logs.")),
    ],
)
def test_the_status_path_imports_nothing_heavy(
    argv: list[str], reply: Any, daemon: DaemonDouble, home: Path
) -> None:
    daemon.replies["status"] = reply
    env = {"PATH": "/usr/bin:/bin", "TSUKU_HOME": str(home), "TSUKU_SOCKET": str(daemon.path)}
    rc, loaded, out = _loaded_by(["--no-start", *argv], env)
    assert daemon.methods() == ["status"], "the run did not reach the daemon"
    assert rc == (0 if "result" in reply({})[0] else 1)
    assert ("boom" if "error" in reply({})[0] else "4242") in out
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY + DAEMON_SIDE]
    assert heavy == [], f"`tsukuctl {' '.join(argv)}` imports {heavy}"
    tsukud = {m for m in loaded if m.startswith("tsukud.")}
    assert tsukud <= {
        "tsukud.caller_env",
        "tsukud.errors",
        "tsukud.launch",
        "tsukud.paths",
        "tsukud.provider_specs",
        "tsukud.terminal",
        "tsukud.wirejson",
    }


def test_the_installed_command_is_the_plain_script() -> None:
    """pip's entry-point script imports ``re`` before ``tsukuctl`` runs; the package
    installs ``bin/tsukuctl`` instead, which imports only ``sys`` and the client."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "tsukuctl" not in project["project"]["scripts"]
    assert project["tool"]["setuptools"]["script-files"] == ["bin/tsukuctl"]
    script = (REPO / "bin" / "tsukuctl").read_text()
    assert script.startswith("#!python\n")  # the installer writes its interpreter there
    imported = [
        alias.name if isinstance(node, ast.Import) else f"{node.module}.{alias.name}"
        for node in ast.walk(ast.parse(script))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert imported == ["sys", "tsukuctl.cli.main"]


def test_this_venvs_command_starts_without_re(home: Path) -> None:
    """The command this checkout's venv runs (a venv installed before the change keeps
    pip's script: ``scripts/dev setup`` reinstalls when pyproject.toml changes)."""
    command = Path(sys.executable).parent / "tsukuctl"
    cp = subprocess.run(
        [sys.executable, "-X", "importtime", str(command), "--no-start", "status"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "TSUKU_HOME": str(home)},
    )
    assert cp.returncode == 20 and "no tsukud answers" in cp.stderr
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in cp.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "tsukuctl.cli" in imported
    assert imported.isdisjoint(HEAVY), (
        f"{command} imports {sorted(imported & set(HEAVY))}: a venv installed before "
        "bin/tsukuctl replaced the entry point keeps pip's script; `scripts/dev setup` "
        "reinstalls it"
    )
