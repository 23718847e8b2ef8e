"""``-q``/``--quiet`` and ``-v``/``--verbose`` on every command and subcommand.

The flags are added to every parser in the tree after the command modules registered
theirs (a module that already has one, ``create -q``, keeps its own), so a new command
gets them without asking. On a subcommand they default to "not given" (argparse would
otherwise let the subcommand's default overwrite ``tsukuctl -q``'s); the top-level
parser's default (False) is what a command reads when neither was given.

Quiet leaves stdout alone (the result line, tables, JSON) and sends every other line on
stderr (progress, notes, questions) to the null device; errors are printed after
:func:`loud` puts stderr back. Without a terminal on stderr nothing can be asked, so a
quiet run that needs a yes says so in its error (pass ``--yes``). Verbose adds
``debug:`` lines on stderr: the socket, each request's method, time and session.
Standard library only.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any, TextIO

QUIET_HELP = "only errors and the final result"
VERBOSE_HELP = "debug details on stderr: socket, request times, sessions"

_verbose = False
_saved_stderr: TextIO | None = None


def add_flags(parser: argparse.ArgumentParser, *, top: bool = True) -> None:
    """``-q`` and ``-v`` on ``parser`` and every parser below it."""
    import argparse  # (loaded by then: only argparse's parsers get the flags)

    have = {s for a in parser._actions for s in a.option_strings}
    default: dict[str, Any] = {} if top else {"default": argparse.SUPPRESS}
    if not top:  # a command's own -q (create) must not reset `tsukuctl -q create`
        for action in parser._actions:
            if action.dest in ("quiet", "verbose"):
                action.default = argparse.SUPPRESS
    if not {"-q", "--quiet"} & have:
        parser.add_argument("-q", "--quiet", action="store_true", help=QUIET_HELP, **default)
    if not {"-v", "--verbose"} & have:
        parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP, **default)
    for sub in subparsers(parser):
        add_flags(sub, top=False)


def subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers of ``parser``'s subcommands, each once (an alias shares its parser)."""
    import argparse

    found: dict[int, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.setdefault(id(sub), sub)
    return list(found.values())


def apply(args: argparse.Namespace) -> None:
    """Set this run's verbosity from the parsed flags."""
    global _verbose, _saved_stderr
    _verbose = bool(getattr(args, "verbose", False))
    if getattr(args, "quiet", False) and _saved_stderr is None:
        _saved_stderr = sys.stderr
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (for the rest of the run)
        _verbose = False


def loud() -> None:
    """Put stderr back (an error is printed even under ``-q``)."""
    global _saved_stderr
    if _saved_stderr is not None:
        sys.stderr.close()
        sys.stderr, _saved_stderr = _saved_stderr, None


def verbose() -> bool:
    return _verbose


def debug(text: str) -> None:
    if _verbose:
        from tsukud.terminal import terminal_safe

        sys.stderr.write(terminal_safe(f"debug: {text}") + "\n")
        sys.stderr.flush()
