"""`-q`/`-v` on every command: the parser walk, and what each does to the output."""

from __future__ import annotations

import argparse
import io
import sys

import pytest

from tsukuctl import cli, verbosity


def every_parser(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += every_parser(sub, (*path, name))
    return found


def test_every_command_and_subcommand_takes_q_and_v() -> None:
    parsers = every_parser(cli.build_parser())
    assert len(parsers) > len(cli.COMMANDS)  # subcommands of subcommands (hook install, ...)
    for path, parser in parsers:
        dests = {s: a.dest for a in parser._actions for s in a.option_strings}
        for flags, dest in ((("-q", "--quiet"), "quiet"), (("-v", "--verbose"), "verbose")):
            for flag in flags:
                assert dests.get(flag) == dest, f"tsukuctl {' '.join(path)} {flag}"


def least_argv(parser: argparse.ArgumentParser) -> list[str] | None:
    """The fewest words this parser accepts (a choice or a word per required argument);
    None when it needs a subcommand (its subcommands are walked instead)."""
    argv: list[str] = []
    for action in parser._actions:
        if action.option_strings and action.required:
            argv += [action.option_strings[0], "x"]
        if action.option_strings or action.nargs in ("?", "*"):
            continue
        if isinstance(action, argparse._SubParsersAction):
            return None
        argv.append(str(next(iter(action.choices))) if action.choices else "x")
    return argv


def test_the_flags_parse_before_and_after_every_command() -> None:
    top = cli.build_parser()
    walked = 0
    for path, parser in every_parser(top)[1:]:
        rest = least_argv(parser)
        if rest is None:
            continue
        before, _ = top.parse_known_args(["-q", *path, *rest])
        after, _ = top.parse_known_args([*path, *rest, "-v"])
        assert before.quiet is True and not getattr(before, "verbose", False), path
        assert after.verbose is True and not after.quiet, path
        walked += 1
    assert walked >= len(cli.COMMANDS)


def test_quiet_drops_stderr_until_an_error_puts_it_back(monkeypatch: pytest.MonkeyPatch) -> None:
    real = io.StringIO()
    monkeypatch.setattr(sys, "stderr", real)
    verbosity.apply(argparse.Namespace(quiet=True, verbose=True))
    try:
        assert not verbosity.verbose()  # -q wins over -v
        sys.stderr.write("progress\n")
        verbosity.debug("not shown")
    finally:
        verbosity.loud()
    assert sys.stderr is real and real.getvalue() == ""
    verbosity.apply(argparse.Namespace(quiet=False, verbose=True))
    verbosity.debug("shown\x1b[31m")
    verbosity.apply(argparse.Namespace())
    verbosity.debug("not again")
    assert real.getvalue() == "debug: shown\n"  # terminal-safe, like every line
