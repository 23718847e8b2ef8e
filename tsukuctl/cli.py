"""``tsukuctl``: the command line's parsing and dispatch.

Each command lives in a ``*_commands.py`` module: a ``register(sub)`` adding its parsers
(whose ``fn`` takes the parsed arguments and returns an exit code) and the functions
behind them. Output for people goes to stdout, diagnostics to stderr; ``--json``/``--csv``
are for machines and never mix in prose. Errors print the message and a hint and exit
with the documented code (docs/exit-codes.md).

``status`` as prompts and scripts run it (:func:`hot_args`) is read without argparse:
argparse imports ``re``, and the two cost about as much as ``python -c pass`` itself
(issue 32: ``tsukuctl status`` within 2x of it). Everything else is argparse's.
"""

from __future__ import annotations

import os
import sys

from tsukuctl import verbosity
from tsukuctl.client import RemoteError
from tsukud import __version__
from tsukud.errors import ExitCode, TsukuError

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    import argparse
    from argparse import Namespace
    from collections.abc import Sequence
    from typing import Any
else:

    class Namespace:
        """What the hot path needs of ``argparse.Namespace`` (attributes from keywords),
        without importing argparse."""

        def __init__(self, **kwargs: Any) -> None:
            self.__dict__.update(kwargs)


# Command word → the module whose ``register`` adds it. Standard library only, like this
# file. ``tsukuctl --help`` lists the commands in this order.
COMMANDS: dict[str, str] = {
    "status": "tsukuctl.status_commands",
    "events": "tsukuctl.events_commands",
    "daemon": "tsukuctl.daemon_commands",
    "config": "tsukuctl.config_commands",
    "sandbox": "tsukuctl.sandbox_commands",
    "llm": "tsukuctl.llm_commands",
    "install": "tsukuctl.install_commands",
    "list": "tsukuctl.install_commands",
    "remove": "tsukuctl.install_commands",
    "uninstall": "tsukuctl.install_commands",  # aliases of remove (uv, brew, pip habits)
    "rm": "tsukuctl.install_commands",
    "verify": "tsukuctl.install_commands",
    "info": "tsukuctl.install_commands",
    "update-registry": "tsukuctl.install_commands",
    "plan": "tsukuctl.plan_commands",
    "outdated": "tsukuctl.upgrade_commands",
    "upgrade": "tsukuctl.upgrade_commands",
    "create": "tsukuctl.create_commands",
    "batch": "tsukuctl.batch_commands",
    "eval": "tsukuctl.eval_commands",
    "hook": "tsukuctl.hook_commands",
    "shell-init": "tsukuctl.hook_commands",
    "demo": "tsukuctl.demo_commands",
    "search": "tsukuctl.discover_commands",
    "discover": "tsukuctl.discover_commands",
    "doctor": "tsukuctl.doctor_commands",
    "completion": "tsukuctl.completion_commands",
    "help": "tsukuctl.cli",
}
COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMANDS.values()))


_parser_class: type[argparse.ArgumentParser] | None = None


def _new_parser(**kwargs: Any) -> argparse.ArgumentParser:
    """An argparse parser with "did you mean" for a mistyped choice (a command, an
    action, a ``--by`` value); its subcommands' parsers are of the same class. The class
    is made on the first parser, so a hot command never imports argparse; ``difflib``
    is imported only when a word is wrong."""
    global _parser_class
    if _parser_class is None:
        import argparse

        class Parser(argparse.ArgumentParser):
            def _check_value(self, action: argparse.Action, value: Any) -> None:
                choices = action.choices
                if choices is None or value in choices:
                    return
                names = [str(c) for c in choices]
                close = _close_matches(str(value), names)
                if close:
                    raise argparse.ArgumentError(
                        action, f"invalid choice: {value!r}; did you mean {_either(close)}?"
                    )
                raise argparse.ArgumentError(
                    action,
                    f"invalid choice: {value!r} (choose from {', '.join(map(repr, names))})",
                )

        _parser_class = Parser
    return _parser_class(**kwargs)


def _close_matches(word: str, names: Sequence[str]) -> list[str]:
    """The names ``word`` was most likely meant to be: close ones, and only those nearly
    as close as the best (``instal`` → install, not also uninstall and list)."""
    import difflib

    scored = []
    for name in names:
        ratio = difflib.SequenceMatcher(None, word, name).ratio()
        if ratio >= 0.6:
            scored.append((ratio, name))
    scored.sort(key=lambda s: -s[0])
    return [name for ratio, name in scored[:3] if ratio >= scored[0][0] - 0.1]


def _either(words: Sequence[str]) -> str:
    quoted = [f"'{w}'" for w in words]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``tsukuctl help [COMMAND...]``: the same text as ``COMMAND --help``."""
    p = sub.add_parser("help", help="show the help of a command (help install, help events list)")
    p.add_argument("topic", nargs="*", metavar="COMMAND")
    p.set_defaults(fn=_help)


def _help(args: argparse.Namespace) -> int:
    try:
        main([*args.topic, "--help"])
    except SystemExit as done:
        return int(done.code or 0)
    return 0


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or (``only``, a command word) one with just that command's module.

    argparse builds a help formatter for every argument, and each module costs its
    import, so building every command costs several milliseconds; a command named on the
    command line (``status``, from scripts and prompts) imports and builds only its own
    module's commands.
    """
    ap = _new_parser(
        prog="tsukuctl",
        description="tsuku: developer tools installed from recipes it writes, checks and repairs.",
    )
    ap.add_argument("--version", action="version", version=f"tsukuctl {__version__}")
    ap.add_argument(
        "--no-start", action="store_true", help="do not start tsukud when none is running"
    )
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    modules = (COMMANDS[only],) if only in COMMANDS else COMMAND_MODULES
    for name in modules:
        __import__(name, fromlist=["register"]).register(sub)
    verbosity.add_flags(ap)
    return ap


def attach_examples(parser: argparse.ArgumentParser, words: str = "") -> None:
    """Each command's ``--help`` ends with its examples (``tsukuctl/examples.py``, read
    only when help is asked for)."""
    import argparse

    from tsukuctl.examples import epilog

    text = epilog(words) if words else None
    if text:  # an alias (`rm`) has none of its own: its command's stay
        parser.epilog = text
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                attach_examples(sub, f"{words} {name}".strip())


def command_word(argv: Sequence[str]) -> str | None:
    """The command named in ``argv``; None when help or the version is asked for first."""
    for a in argv:
        if a in ("-h", "--help", "--version"):
            return None
        if not a.startswith("-"):
            return a
    return None


#: The hot command lines, as argparse would read them: ``[--no-start] status [--json]``.
_HOT_BEFORE = frozenset({"--no-start"})
_HOT_AFTER = {"status": frozenset({"--json"})}


def hot_args(argv: Sequence[str]) -> Namespace | None:
    """The arguments argparse would make of a hot command line (the same attributes,
    defaults and handler: ``tests/unit/tsukuctl/test_hot_path.py`` compares them), or
    None for any other line, which argparse then reads: a flag given twice, ``-q``,
    ``--origin``, help, a typo all take the full path with its messages."""
    words = list(argv)
    before = set()
    while words and words[0] in _HOT_BEFORE and words[0] not in before:
        before.add(words.pop(0))
    if not words or words[0] not in _HOT_AFTER:
        return None
    command, after = words[0], words[1:]
    if len(set(after)) != len(after) or not _HOT_AFTER[command].issuperset(after):
        return None
    from tsukuctl.status_commands import cmd_status

    return Namespace(
        no_start="--no-start" in before,
        command=command,
        json="--json" in after,
        origin=None,
        fn=cmd_status,
        quiet=False,
        verbose=False,
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = hot_args(argv) or _parse(argv)
    if args is None:
        return ExitCode.USAGE
    verbosity.apply(args)
    try:
        return int(args.fn(args))
    except RemoteError as e:
        if e.remote_code == "cancelled":
            return _cancelled(e.data, args.command)
        _report(args, error_object(e))
        return e.exit_status
    except TsukuError as e:
        _report(args, error_object(e))
        return e.exit_code
    except KeyboardInterrupt:
        return _cancelled(None, args.command)
    except BrokenPipeError:
        # `tsukuctl events | head`: the reader left; that is not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    finally:
        verbosity.loud()


def _parse(argv: Sequence[str]) -> Namespace | None:
    """argparse's reading of ``argv`` (usage errors exit 2 from inside it); None, after
    the help, when no command was named."""
    parser = build_parser(command_word(argv))
    if "-h" in argv or "--help" in argv or not argv:  # (`help X` comes back with --help)
        attach_examples(parser)
    stray = _stray_flags(parser, argv)
    if stray:  # before argparse reads its value as a word of its own ("invalid choice")
        _unknown_arguments(parser, argv, stray)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        _unknown_arguments(parser, argv, unknown)
    if not getattr(args, "fn", None):
        parser.print_help()
        return None
    return args


def _innermost(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.ArgumentParser:
    """The (sub)command parser the words of ``argv`` lead to: ``events list`` → its own."""
    import argparse

    for word in argv:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if subs and word in subs[0].choices:
            parser = subs[0].choices[word]
    return parser


def _stray_flags(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """Long flags no parser on the command's path knows (``events --tpye llm.turn``).
    argparse would take the flag's value for the next positional word and complain
    about that word instead; naming the flag (and what it was meant to be) helps.
    A word that is an option's value, or after ``--``, is not a flag."""
    import argparse

    chain = [parser]
    for word in argv:
        subs = [a for a in chain[-1]._actions if isinstance(a, argparse._SubParsersAction)]
        if subs and word in subs[0].choices:
            chain.append(subs[0].choices[word])
    takes_value: dict[str, bool] = {}
    for p in chain:
        for a in p._actions:
            for flag in a.option_strings:
                takes_value[flag] = a.nargs != 0
    stray: list[str] = []
    value_next = False
    for word in argv:
        if value_next:
            value_next = False
            continue
        if word == "--":
            break
        if not word.startswith("--"):
            continue
        name = word.split("=", 1)[0]
        known = [f for f in takes_value if f == name] or [
            f for f in takes_value if f.startswith(name) and f.startswith("--")
        ]
        if not known:
            stray.append(word)
        elif "=" not in word and len(known) == 1 and takes_value[known[0]]:
            value_next = True
    return stray


def _unknown_arguments(
    parser: argparse.ArgumentParser, argv: Sequence[str], unknown: Sequence[str]
) -> None:
    """Refuse arguments no parser took, with the usage of the command they were given
    to (not the top level's) and the flag they were probably meant to be."""
    owner = _innermost(parser, argv)
    flags = [s for a in owner._actions for s in a.option_strings if s.startswith("--")]
    message = f"unrecognized arguments: {' '.join(unknown)}"
    for word in unknown:
        close = _close_matches(word.split("=", 1)[0], flags) if word.startswith("-") else []
        if close:
            message += f"; did you mean {_either(close)}?"
            break
    owner.error(message)


# What a cancelled request leaves behind, for the commands where that is certain: an
# install is undone as any failure is, and create writes its recipe only once the run
# is over. Elsewhere (an upgrade of several tools may have finished some) the line
# claims nothing.
NOTHING_DONE = {"install": "nothing was installed", "create": "nothing was written"}


def cancelled_line(data: dict[str, Any] | None, command: str | None) -> str:
    """The one line for Ctrl-C: what the run spent (the daemon's ``cancelled`` answer
    carries it), else what was left undone when the daemon confirmed the cancel."""
    spent = (data or {}).get("spent_usd")
    if isinstance(spent, int | float) and spent > 0:
        from tsukuctl.render import money

        return f"cancelled: the run spent {money(spent)}"
    if data is not None and command in NOTHING_DONE:
        return f"cancelled: {NOTHING_DONE[command]}"
    # Interrupted before the daemon could answer (or while it was not asked).
    return "cancelled"


def _cancelled(data: dict[str, Any] | None, command: str | None) -> int:
    """Ctrl-C: one line, then exit 130 as shells expect."""
    from tsukuctl.command import err

    err(cancelled_line(data, command))
    return ExitCode.CANCELLED


def error_object(e: TsukuError) -> dict[str, Any]:
    """An error as ``--json`` prints it (docs/cli.md): the daemon's code, message, hint
    and exit code, or a local error's own; ``data`` when the error carries any."""
    if isinstance(e, RemoteError):
        body: dict[str, Any] = {
            "code": e.remote_code,
            "message": e.message,
            "hint": e.hint,
            "exit_code": e.exit_status,
        }
    else:
        body = {"code": e.code, "message": e.message, "hint": e.hint, "exit_code": e.exit_code}
    if e.data:
        body["data"] = e.data
    return body


def _report(args: argparse.Namespace, error: dict[str, Any]) -> None:
    """An error on stderr as a message and a hint; with ``--json``, the one JSON object
    ``{"error": {...}}`` on stdout instead, so a script reads every outcome there."""
    if getattr(args, "json", False):
        from tsukuctl.command import out
        from tsukuctl.render import jsonl

        verbosity.loud()
        out(jsonl({"error": error}))
        return
    print_error(str(error["message"]), str(error.get("hint") or ""))


def print_error(message: str, hint: str) -> None:
    from tsukuctl.command import err  # an error may quote a model, GitHub or an archive

    verbosity.loud()
    err(f"tsukuctl: {message}")
    if hint:
        err(f"hint: {hint}")


if __name__ == "__main__":
    sys.exit(main())
