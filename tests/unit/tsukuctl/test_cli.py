"""``tsukuctl``'s parsing, dispatch, exit codes and rendering: the real parser and the
real client, against a daemon double on a Unix socket (conftest)."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.unit.tsukuctl.conftest import DaemonDouble, error, result
from tsukuctl import cli, render
from tsukuctl.events_commands import CSV_COLUMNS
from tsukud import __version__
from tsukud.errors import ExitCode

STATUS: dict[str, Any] = {
    "version": "0.1.0",
    "pid": 4242,
    "uptime_s": 3725.0,
    "socket": "/run/user/1000/tsuku/tsukud.sock",
    "activation": "self",
    "home": "/home/u/.tsuku",
    "budget": {
        "spent_usd": 0.1234,
        "reserved_usd": 0.004,
        "daily_budget_usd": 5.0,
        "day": "2026-11-23",
        "confirm_threshold_usd": 0.5,
    },
    "generations": {"count": 3, "limit": 10},
    "breakers": [],
    "events": {"count": 17},
    "database": "/home/u/.tsuku/tsuku.db",
}

EVENTS = [
    {
        "id": 1,
        "ts": "2026-11-23T10:00:00.000000Z",
        "type": "llm.turn",
        "session": "s-0123456789abcdef",
        "payload": {
            "provider": "claude",
            "model": "m1",
            "input_tokens": 10,
            "output_tokens": 5,
            "cost_usd": 0.01,
        },
    },
    {
        "id": 2,
        "ts": "2026-11-23T10:00:01.000000Z",
        "type": "install.done",
        "session": None,
        "payload": {"tool": "stern"},
    },
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["--no-start", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def subcommands(parser: argparse.ArgumentParser) -> list[str]:
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(sub.choices)


# ---- parsing ------------------------------------------------------------------------------


def test_each_module_registers_exactly_the_words_mapped_to_it() -> None:
    assert subcommands(cli.build_parser()) == list(cli.COMMANDS)
    for module in cli.COMMAND_MODULES:
        words = [w for w, m in cli.COMMANDS.items() if m == module]
        for word in words:
            assert subcommands(cli.build_parser(word)) == words, module


def test_a_named_command_imports_only_its_own_module() -> None:
    code = (
        "import sys; from tsukuctl import cli; cli.build_parser(sys.argv[1]); "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('tsukuctl.'))))"
    )

    def loaded(word: str) -> set[str]:
        cp = subprocess.run(
            [sys.executable, "-c", code, word], capture_output=True, text=True, check=True
        )
        return set(cp.stdout.split())

    floor = {"tsukuctl.cli", "tsukuctl.client", "tsukuctl.verbosity"}
    assert loaded("status") == floor | {
        "tsukuctl.status_commands",
        "tsukuctl.command",
        "tsukuctl.render",
    }
    assert loaded("daemon") == floor | {"tsukuctl.daemon_commands", "tsukuctl.command"}
    assert "tsukuctl.status_commands" not in loaded("install")
    assert floor | set(cli.COMMAND_MODULES) <= loaded("no-such-command")


@pytest.mark.parametrize(
    ("argv", "word"),
    [
        (["status", "--json"], "status"),
        (["--no-start", "events", "summary"], "events"),
        (["--help", "status"], None),
        (["--version"], None),
        (["-h"], None),
        ([], None),
        (["--no-start"], None),
        (["update-registry"], "update-registry"),
    ],
)
def test_the_command_word_is_the_first_non_option(argv: list[str], word: str | None) -> None:
    assert cli.command_word(argv) == word


def test_no_command_prints_the_help_and_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys)
    assert code == ExitCode.USAGE
    assert "usage: tsukuctl" in out and "update-registry" in out and "status" in out


def test_a_mistyped_command_gets_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    for typo, meant in (("statsu", "status"), ("instal", "install"), ("hepl", "help")):
        with pytest.raises(SystemExit) as exc:
            cli.main([typo])
        assert exc.value.code == ExitCode.USAGE
        err = capsys.readouterr().err
        assert err.startswith("usage: tsukuctl [-h]")
        assert err.endswith(f"invalid choice: '{typo}'; did you mean '{meant}'?\n")


def test_an_unknown_command_far_from_any_lists_the_choices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["xyzzy"])
    assert exc.value.code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "invalid choice: 'xyzzy' (choose from 'status', 'events'," in err
    assert "did you mean" not in err


def test_a_mistyped_action_gets_a_suggestion_with_its_command_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["events", "summry"])
    assert exc.value.code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith("usage: tsukuctl events ")
    assert "invalid choice: 'summry'; did you mean 'summary'?" in err


@pytest.mark.parametrize(
    ("argv", "typo", "usage", "meant"),
    [
        (["install", "--jsn", "kind"], "--jsn", "usage: tsukuctl install ", "'--json'"),
        (["events", "summary", "--bye", "day"], "--bye", "usage: tsukuctl events ", "'--by'"),
        (["--no-start", "status", "--jason"], "--jason", "usage: tsukuctl status ", "'--json'"),
        # The flag is named, not its value taken for the action word (issue 29, point 8).
        (["events", "--tpye", "llm.turn"], "--tpye", "usage: tsukuctl events ", "'--type'"),
        (["events", "list", "--tpye=llm.*"], "--tpye=llm.*", "usage: tsukuctl events ", "'--type'"),
    ],
)
def test_a_mistyped_flag_shows_its_command_usage_and_a_suggestion(
    argv: list[str], typo: str, usage: str, meant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith(usage), err
    assert f"unrecognized arguments: {typo}; did you mean {meant}?" in err


def test_help_of_a_command_is_its_usage_and_exits_zero(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["help", "install"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: tsukuctl install ") and "--from SOURCE" in text
    assert cli.main(["help", "events", "summary"]) == 0
    assert capsys.readouterr().out.startswith("usage: tsukuctl events ")
    assert cli.main(["help"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: tsukuctl ") and "update-registry" in text


def test_help_of_a_mistyped_command_suggests_the_right_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["help", "instal"]) == ExitCode.USAGE
    assert "did you mean 'install'?" in capsys.readouterr().err


@pytest.mark.parametrize("word", ["remove", "uninstall", "rm"])
def test_uninstall_and_rm_are_remove(
    word: str, daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    daemon.replies["tools.remove"] = result({"tool": "kind", "version": "0.20.0"})
    code, out, _ = run(capsys, word, "kind")
    assert code == 0 and out == "removed kind 0.20.0\n"
    assert daemon.requests == [("tools.remove", {"tool": "kind"})]


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--limit", "-5"),
        ("--limit", "x"),
        ("--limit", "1.5"),
        ("--limit", str(2**63)),  # past SQLite's integers: was the daemon's invalid_params
        ("--head", "zz"),
        ("--head", "0" * 15),
        ("--head", "g" * 64),
    ],
)
def test_a_bad_count_or_head_is_a_usage_error_before_any_call(
    flag: str, value: str, daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--no-start", "events", "verify" if flag == "--head" else "list", flag, value])
    assert exc.value.code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith("usage: tsukuctl events ") and f"argument {flag}:" in err
    assert daemon.requests == []


@pytest.mark.parametrize("action", ["list", "summary"])
def test_head_outside_verify_is_a_usage_error_not_ignored(
    action: str, daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    head = "0123456789abcdef"
    assert cli.main(["--no-start", "events", action, "--head", head]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert f"--head is for `tsukuctl events verify`, not events {action}" in err
    assert f"hint: tsukuctl events verify --head {head}" in err
    assert daemon.requests == []


def test_an_empty_version_is_a_usage_error_before_any_call(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--no-start", "install", "age@"]) == ExitCode.USAGE
    assert "nothing after '@'" in capsys.readouterr().err
    assert daemon.requests == []  # not an install of the newest age


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"tsukuctl {__version__}\n"


def test_a_bad_choice_of_a_core_command_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["events", "--by", "week"])
    assert exc.value.code == ExitCode.USAGE
    assert "invalid choice: 'week'" in capsys.readouterr().err


# ---- dispatch and exit codes --------------------------------------------------------------


def test_no_daemon_and_no_start_is_daemon_unavailable(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "status")
    assert code == ExitCode.DAEMON_UNAVAILABLE
    assert out == ""
    assert err == (
        f"tsukuctl: no tsukud answers on {home / 'd.sock'}\n"
        "hint: Start it with `tsukuctl daemon start`, or leave out --no-start to have it "
        "started on demand.\n"
    )


def test_an_error_frame_exits_with_its_code_and_prints_the_hint(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    daemon.replies["status"] = error(
        "budget_exceeded", "daily budget spent", ExitCode.BUDGET, hint="Raise budget.daily."
    )
    code, out, err = run(capsys, "status")
    assert code == ExitCode.BUDGET
    assert out == ""
    assert err == "tsukuctl: daily budget spent\nhint: Raise budget.daily.\n"


# ---- status -------------------------------------------------------------------------------


def test_status_for_people(daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]) -> None:
    daemon.replies["status"] = result(STATUS)
    code, out, _ = run(capsys, "status")
    assert code == 0 and daemon.requests == [("status", {})]
    assert out.splitlines() == [
        "tsukud 0.1.0  pid 4242  up 1h2m5s",
        "socket       /run/user/1000/tsuku/tsukud.sock (self)",
        "home         /home/u/.tsuku",
        "budget       $0.12 spent + $0.0040 reserved of $5.00 today (2026-11-23 UTC);"
        " confirm above $0.50",
        "generations  3 of 10 in the last hour",
        "breakers     no provider used yet",
        "events       17 in /home/u/.tsuku/tsuku.db",
    ]


def test_status_names_only_the_breakers_that_are_not_quiet(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    closed = {"state": "closed", "consecutive_failures": 0, "retry_at": None, "last_error": None}
    opened = {
        "provider": "gemini",
        "state": "open",
        "consecutive_failures": 3,
        "retry_at": "2026-11-23T11:00:00Z",
        "last_error": "timeout",
    }
    daemon.replies["status"] = result({**STATUS, "breakers": [{"provider": "claude", **closed}]})
    assert "breakers     all closed (claude)\n" in run(capsys, "status")[1]
    daemon.replies["status"] = result(
        {**STATUS, "breakers": [{"provider": "claude", **closed}, opened]}
    )
    out = run(capsys, "status")[1]
    assert "breaker      gemini: open until 2026-11-23T11:00:00Z, 3 consecutive failures" in out
    assert "claude" not in out


def test_status_json_is_the_result_on_one_line(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    daemon.replies["status"] = result(STATUS)
    code, out, _ = run(capsys, "status", "--json")
    assert code == 0 and out.count("\n") == 1 and json.loads(out) == STATUS


# ---- events -------------------------------------------------------------------------------


def streamed(params: dict[str, Any]) -> list[dict[str, Any]]:
    """events.list: the events in two progress batches, then the count."""
    return [
        {"progress": {"events": EVENTS[:1]}},
        {"progress": {"events": EVENTS[1:]}},
        {"result": {"count": len(EVENTS)}},
    ]


def test_events_sends_the_filter_and_renders_a_table(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(render, "term_width", lambda: 100)  # details are cut to fit
    daemon.replies["events.list"] = streamed
    code, out, err = run(
        capsys, "events", "--type", "llm.*,install.done", "--session", "s-1", "--limit", "2"
    )
    assert code == 0
    assert daemon.requests == [
        (
            "events.list",
            {"filter": {"types": ["llm.*", "install.done"], "session": "s-1"}, "limit": 2},
        )
    ]
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "TIME", "(UTC)", "TYPE", "SESSION", "DETAILS"]
    assert lines[1].split()[:5] == ["1", "2026-11-23", "10:00:00.000", "llm.turn", "s-0123456789"]
    # DETAILS gets what the fixed columns leave of 100 (at least 20): 28 here.
    assert lines[1].endswith("  provider=claude model=m1 in…")
    assert lines[2].split() == ["2", "2026-11-23", "10:00:01.000", "install.done", "tool=stern"]
    assert err == "(newest 2 shown; --limit 0 for all)\n"


def test_events_json_lines_and_csv(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    daemon.replies["events.list"] = streamed
    code, out, _ = run(capsys, "events", "--json")
    assert code == 0 and [json.loads(x) for x in out.splitlines()] == EVENTS
    code, out, _ = run(capsys, "events", "--csv")
    rows = out.splitlines()
    assert code == 0 and rows[0] == ",".join(CSV_COLUMNS)
    assert rows[1].startswith(
        "1,2026-11-23T10:00:00.000000Z,llm.turn,s-0123456789abcdef,claude,m1,10,5,0.01,"
    )
    assert rows[2] == '2,2026-11-23T10:00:01.000000Z,install.done,,,,,,,"{""tool"":""stern""}"'


def test_events_with_no_match_says_so(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    daemon.replies["events.list"] = result({"count": 0})
    assert run(capsys, "events") == (0, "no events match\n", "")


def test_events_with_no_match_pass_on_the_daemons_hint(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    daemon.replies["events.list"] = result({"count": 0, "hint": "no event type is 'x.*'"})
    assert run(capsys, "events", "--type", "x.*") == (
        0,
        "no events match\n",
        "hint: no event type is 'x.*'\n",
    )


def test_an_option_value_or_an_abbreviation_is_not_a_stray_flag() -> None:
    parser = cli.build_parser("events")
    assert cli._stray_flags(parser, ["events", "--ty", "llm.turn"]) == []
    assert cli._stray_flags(parser, ["events", "--session", "--odd", "list"]) == []
    assert cli._stray_flags(parser, ["events", "-v", "--", "--tpye"]) == []
    assert cli._stray_flags(parser, ["events", "--json", "--tpye", "x"]) == ["--tpye"]


def test_a_bad_time_is_a_usage_error_before_any_call(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "events", "--since", "yesterday-ish")
    assert code == ExitCode.USAGE and out == ""
    assert err.startswith("tsukuctl: ") and "yesterday-ish" in err
    assert daemon.requests == []


SUMMARY_GROUP = {
    "key": "claude",
    "events": 4,
    "llm_turns": 2,
    "input_tokens": 100,
    "output_tokens": 50,
    "cost_usd": 0.5,
    "cost_unknown": 1,
}


def test_events_summary_table_has_a_total_row(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    group = SUMMARY_GROUP
    daemon.replies["events.summary"] = result(
        {"groups": [group, {**group, "key": None, "cost_unknown": 0}], "totals": group}
    )
    code, out, _ = run(capsys, "events", "summary", "--by", "provider")
    assert code == 0
    assert daemon.requests == [("events.summary", {"filter": {}, "by": "provider"})]
    lines = [line.split() for line in out.splitlines()]
    assert lines[0] == [
        "PROVIDER",
        "EVENTS",
        "LLM",
        "TURNS",
        "INPUT",
        "TOK",
        "OUTPUT",
        "TOK",
        "COST",
    ]
    assert lines[1] == ["claude", "4", "2", "100", "50", "$0.50", "+1", "unpriced"]
    assert lines[2] == ["(none)", "4", "2", "100", "50", "$0.50"]
    assert lines[3] == ["total", "4", "2", "100", "50", "$0.50", "+1", "unpriced"]


def test_events_summary_says_which_part_of_the_cost_is_estimated(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    # Part of this group's cost was charged at a worst case (calls cut off).
    group = {**SUMMARY_GROUP, "events": 3, "cost_unknown": 0}
    group.update(cost_usd=1.23, cost_estimated_usd=0.4)
    plain = {**group, "key": "gemini", "cost_usd": 0.5, "cost_estimated_usd": 0.0}
    reply = {"by": "provider", "groups": [group, plain], "totals": group, "source": "rollups"}
    daemon.replies["events.summary"] = result(reply)
    code, out, _ = run(capsys, "events", "summary", "--by", "provider")
    assert code == 0
    lines = out.splitlines()
    assert lines[1].split()[1:] == [
        "3",
        "2",
        "100",
        "50",
        "$1.23",
        "(of",
        "which",
        "$0.40",
        "estimated)",
    ]
    assert lines[2].split()[-1] == "$0.50"
    assert lines[3].startswith("total") and lines[3].endswith("$1.23 (of which $0.40 estimated)")

    code, out, _ = run(capsys, "events", "summary", "--by", "provider", "--csv")
    assert out.splitlines()[0].split(",")[5:7] == ["cost_usd", "cost_estimated_usd"]
    assert out.splitlines()[1].split(",")[5:7] == ["1.23", "0.4"]

    code, out, _ = run(capsys, "events", "summary", "--by", "provider", "--json")
    assert json.loads(out)["groups"][0]["cost_estimated_usd"] == 0.4


def test_events_verify(daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]) -> None:
    daemon.replies["events.verify"] = result({"checked": 17, "head": "ab" * 32})
    code, out, _ = run(capsys, "events", "verify")
    assert code == 0
    # The whole head: it is what a user notes to check against later (--head).
    assert out == f"ledger ok: 17 events, hash chain intact (head {'ab' * 32})\n"
    assert daemon.requests[-1] == ("events.verify", {})

    daemon.replies["events.verify"] = result({"checked": 17, "head": "ab" * 32, "head_id": 9})
    code, out, _ = run(capsys, "events", "verify", "--head", "cd" * 8)
    assert code == 0 and daemon.requests[-1] == ("events.verify", {"head": "cd" * 8})
    assert out.splitlines()[1] == "the head you gave is event 9: nothing up to it was changed"


# ---- config -------------------------------------------------------------------------------


def _config_file(home: Path, text: str) -> Path:
    f = home / "config.toml"
    f.write_text(text)
    f.chmod(0o600)
    return f


def test_config_works_on_the_file_without_the_daemon(
    daemon: DaemonDouble, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _config_file(home, "# budget for the team\n[llm]\ndaily_budget = 2.0  # USD\n")
    assert run(capsys, "config", "path") == (0, f"{f}\n", "")
    assert run(capsys, "config", "get", "llm.daily_budget") == (0, "2.0\n", "")
    assert run(capsys, "config", "set", "llm.daily_budget", "3.5") == (
        0,
        "llm.daily_budget = 3.5  (file)\n",
        "",
    )
    assert f.read_text() == "# budget for the team\n[llm]\ndaily_budget = 3.5  # USD\n"
    code, out, _ = run(capsys, "config", "list")
    assert code == 0
    assert "llm.daily_budget" in out and "3.5" in out and f"file: {f}" in out
    assert run(capsys, "config", "unset", "llm.daily_budget") == (
        0,
        "llm.daily_budget unset (now 5.0 from default)\n",
        "",
    )
    assert "daily_budget" not in f.read_text()
    assert daemon.requests == []  # nothing asked the daemon, nothing started one


def test_config_without_a_key_is_a_usage_error(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "config", "get")
    assert code == ExitCode.USAGE
    assert err == "tsukuctl: config get needs a KEY\nhint: `tsukuctl config list` shows them.\n"
    assert daemon.requests == []


def test_a_secret_is_never_taken_from_the_command_line(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "config", "set", "secrets.anthropic_api_key", "sk-ant-xyz")
    assert code == ExitCode.USAGE and out == ""
    assert "never taken from the command line" in err and "sk-ant-xyz" not in err
    assert daemon.requests == []


def test_a_secret_is_read_from_standard_input(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("sk-ant-from-stdin\n"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code, out, err = run(capsys, "config", "set", "secrets.anthropic_api_key")
    assert (code, out, err) == (0, "secrets.anthropic_api_key = (set)  (file)\n", "")
    f = home / "config.toml"
    assert f.stat().st_mode & 0o777 == 0o600
    assert 'anthropic_api_key = "sk-ant-from-stdin"' in f.read_text()


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("[llm]\nhourly_limit = 2\ndaily_budjet = 1\n", 3, "did you mean llm.daily_budget?"),
        ("[llm]\ndaily_budget = 'lots'\n", 2, "llm.daily_budget must be a number of dollars"),
        ("[llm]\ndaily_budget = \n", 2, "llm.daily_budget is not valid TOML"),
    ],
)
def test_a_bad_file_is_one_error_and_config_can_fix_it(
    home: Path, capsys: pytest.CaptureFixture[str], text: str, line: int, needle: str
) -> None:
    f = _config_file(home, text)
    code, out, err = run(capsys, "config", "get", "llm.daily_budget")
    assert code == ExitCode.CONFIG and out == ""
    first, hint = err.splitlines()
    assert first.startswith(f"tsukuctl: {f}, line {line}: ") and needle in first
    assert hint.startswith("hint: ") and "tsukuctl config" in hint
    code, out, err = run(capsys, "config", "list")
    assert code == 0 and "llm.daily_budget" in out
    assert err.count(needle) == 1 and f"line {line}" in err
    assert run(capsys, "config", "path")[0] == 0


def test_a_syntax_error_leaves_the_rest_of_the_file_and_the_defaults_as_they_are(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _config_file(home, "[llm]\nhourly_limit = 4\ndaily_budget = \n")
    assert run(capsys, "config", "get", "llm.hourly_limit") == (0, "4\n", "")
    assert run(capsys, "config", "get", "llm.confirm_threshold") == (0, "0.5\n", "")
    code, out, err = run(capsys, "config", "get", "llm.daily_budget")
    assert code == ExitCode.CONFIG and "line 3: llm.daily_budget is not valid TOML" in err
    code, out, err = run(capsys, "config", "list")
    assert code == 0 and err.count("problem:") == 1 and f"{f}, line 3" in err
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:] if line.strip()}
    assert rows["llm.hourly_limit"] == ["4", "file"]
    assert rows["llm.confirm_threshold"] == ["0.5", "default"]
    assert rows["llm.daily_budget"] == ["5.0", "file", "(invalid)"]
    assert sum("(invalid)" in line for line in out.splitlines()) == 1


def test_config_edit_replaces_the_file_only_when_it_reads_cleanly(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    f = _config_file(home, "# mine\n[llm]\ndaily_budget = 2.0\n")
    monkeypatch.setenv("VISUAL", "sed -i s/2.0/2.5/")
    assert run(capsys, "config", "edit") == (0, f"{f} saved\n", "")
    assert f.read_text() == "# mine\n[llm]\ndaily_budget = 2.5\n"
    monkeypatch.setenv("VISUAL", "sed -i s/daily_budget/daily_budjet/")
    code, out, err = run(capsys, "config", "edit")  # not a terminal: the edit is kept aside
    assert code == ExitCode.CONFIG and out == ""
    assert "line 3: unknown setting 'llm.daily_budjet'" in err and "is unchanged" in err
    assert f.read_text() == "# mine\n[llm]\ndaily_budget = 2.5\n"
    [kept] = home.glob(".config.*.toml")
    assert "daily_budjet" in kept.read_text() and kept.stat().st_mode & 0o777 == 0o600


# ---- daemon -------------------------------------------------------------------------------


def test_daemon_start_when_one_answers(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    daemon.replies["ping"] = result({"pid": 4242})
    assert run(capsys, "daemon", "start") == (0, "tsukud already running (pid 4242)\n", "")


def test_daemon_stop_waits_for_the_daemon_to_hang_up(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid that no longer runs: the stop is over once the socket closes
    daemon.replies["daemon.stop"] = result({"pid": gone.pid})
    daemon.hang_up_after.add("daemon.stop")
    assert run(capsys, "daemon", "stop") == (0, f"tsukud stopped (pid {gone.pid})\n", "")
    assert daemon.methods() == ["daemon.stop"]


def test_daemon_stop_when_none_runs(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "daemon", "stop") == (0, "tsukud is not running\n", "")


def test_daemon_logs_shows_the_last_lines(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "daemon", "logs") == (
        0,
        f"no log yet at {home / 'logs' / 'tsukud.log'}\n",
        "",
    )
    (home / "logs").mkdir()
    (home / "logs" / "tsukud.log").write_text("".join(f"line {i}\n" for i in range(10)))
    assert run(capsys, "daemon", "logs", "-n", "2") == (0, "line 8\nline 9\n", "")


def cancelled(spent: float) -> Any:
    """The daemon's answer to a request its client cancelled (``RequestCancelled``)."""
    frame = {
        "code": "cancelled",
        "message": "cancelled",
        "hint": "",
        "exit_code": 130,
        "data": {"spent_usd": spent},
    }
    return lambda _params: [{"error": frame}]


@pytest.mark.parametrize(
    ("argv", "method", "line"),
    [
        (["install", "kubectl"], "install", "cancelled: nothing was installed"),
        (
            ["create", "greet", "--from", "npm:greet", "--yes"],
            "create",
            "cancelled: nothing was written",
        ),
        (["upgrade", "--all"], "tools.upgrade", "cancelled"),  # some may have finished
        (["discover", "stern"], "discover", "cancelled"),
    ],
)
def test_a_cancelled_request_says_only_what_is_true_of_its_command(
    argv: list[str],
    method: str,
    line: str,
    daemon: DaemonDouble,
    capsys: pytest.CaptureFixture[str],
) -> None:
    daemon.replies[method] = cancelled(0.0)
    assert cli.main(argv) == ExitCode.CANCELLED == 130
    assert daemon.methods()[-1] == method
    assert capsys.readouterr().err == line + "\n"


def test_a_cancelled_run_that_spent_says_what_it_spent(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    daemon.replies["create"] = cancelled(0.0123)
    assert cli.main(["create", "greet", "--from", "github:a/b", "--yes"]) == 130
    assert capsys.readouterr().err == f"cancelled: the run spent {render.money(0.0123)}\n"


def test_create_shows_the_repair_phase_line(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    """The daemon's ``repairing n/m`` stage reaches stderr as its own line (pipes: one
    line per stage), before the run's end."""
    failed = {"code": "generation_failed", "message": "no recipe", "hint": "", "exit_code": 9}
    repairing = "repairing 1/2 (verify: exit_code)"
    daemon.replies["create"] = lambda _params: [
        {"progress": {"stage": "llm", "message": "asking claude"}},
        {"progress": {"stage": "repairing", "message": repairing, "attempt": 1}},
        {"error": failed},
    ]
    assert cli.main(["create", "picky", "--from", "github:acme/picky", "--yes"]) == 9
    lines = capsys.readouterr().err.splitlines()
    assert f"{repairing}…" in lines, lines
    assert lines.index(f"{repairing}…") > lines.index("asking claude…")


def _parsers(
    parser: argparse.ArgumentParser, words: str = ""
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(words, parser)] if words else []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _parsers(sub, f"{words} {name}".strip())
    return found


def test_every_command_has_examples_and_every_example_parses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 29, point 9: each command's --help ends with two or three real command
    lines, each accepted by the parser as written (no unknown flag, no bad value)."""
    import shlex

    from tsukuctl.examples import EXAMPLES

    parser = cli.build_parser()
    words = {w for w, _p in _parsers(parser)}
    aliases = {"uninstall", "rm"}  # remove's, shown under remove
    assert words - aliases - set(EXAMPLES) == set(), "commands without examples"
    assert set(EXAMPLES) <= words, "examples of commands that do not exist"
    for command, lines in EXAMPLES.items():
        assert 2 <= len(lines) <= 3, command
        for line in lines:
            argv = shlex.split(line, comments=True)
            assert argv[0] == "tsukuctl" and " ".join(argv[1:]).startswith(command), line
            argv = argv[1:]
            assert cli._stray_flags(parser, argv) == [], line
            try:
                args, unknown = cli.build_parser().parse_known_args(argv)
            except SystemExit:
                pytest.fail(f"{line}: {capsys.readouterr().err}")
            assert unknown == [] and getattr(args, "fn", None) is not None, line
    with pytest.raises(SystemExit) as done:
        cli.main(["rm", "--help"])  # an alias shows its command's examples
    assert done.value.code == 0
    assert "examples:\n  tsukuctl remove ripgrep" in capsys.readouterr().out


def test_help_hides_the_measurement_flags() -> None:
    for command in ("install", "create", "discover"):
        sub = dict(_parsers(cli.build_parser(command)))[command]
        assert "--collect-tool-stats" not in sub.format_help(), command


def test_a_plan_says_which_toolchain_comes_from_the_hosts_path() -> None:
    """A toolchain the registry has no recipe for is named in the preview, not
    dropped silently."""
    from tsukuctl.plan_commands import plan_lines

    plan = {
        "tool": "cdk",
        "version": "3.0.0",
        "tag": "3.0.0",
        "platform": {"os": "linux", "arch": "amd64"},
        "steps": [],
        "unsupported": [],
        "host_toolchains": [{"program": "npm", "recipe": "nodejs"}],
    }
    assert (
        "toolchain  npm from this machine's PATH (the registry has no nodejs recipe to "
        "install it from)" in plan_lines(plan)
    )
