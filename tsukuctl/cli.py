"""``tsukuctl``: the command line's parsing and dispatch.

Each command lives in a ``*_commands.py`` module: a ``register(sub)`` adding its parsers
(whose ``fn`` takes the parsed arguments and returns an exit code) and the functions
behind them. Output for people goes to stdout, diagnostics to stderr; ``--json``/``--csv``
are for machines and never mix in prose. Errors print the message and a hint and exit
with the documented code (docs/exit-codes.md).
"""

from __future__ import annotations

import argparse
import os
import sys

from tsukuctl.client import RemoteError
from tsukud import __version__
from tsukud.errors import ExitCode, TsukuError

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from collections.abc import Sequence

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
    "verify": "tsukuctl.install_commands",
    "info": "tsukuctl.install_commands",
    "update-registry": "tsukuctl.install_commands",
    "create": "tsukuctl.create_commands",
    "hook": "tsukuctl.hook_commands",
    "demo": "tsukuctl.demo_commands",
    "discover": "tsukuctl.discover_commands",
}
COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMANDS.values()))


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or (``only``, a command word) one with just that command's module.

    argparse builds a help formatter for every argument, and each module costs its
    import, so building every command costs several milliseconds; a command named on the
    command line (``status``, from scripts and prompts) imports and builds only its own
    module's commands.
    """
    ap = argparse.ArgumentParser(
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
    return ap


def command_word(argv: Sequence[str]) -> str | None:
    """The command named in ``argv``; None when help or the version is asked for first."""
    for a in argv:
        if a in ("-h", "--help", "--version"):
            return None
        if not a.startswith("-"):
            return a
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(command_word(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "fn", None):
        parser.print_help()
        return ExitCode.USAGE
    try:
        return int(args.fn(args))
    except RemoteError as e:
        _print_error(e.message, e.hint)
        return e.exit_status
    except TsukuError as e:
        _print_error(e.message, e.hint)
        return e.exit_code
    except KeyboardInterrupt:
        return ExitCode.CANCELLED
    except BrokenPipeError:
        # `tsukuctl events | head`: the reader left; that is not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _print_error(message: str, hint: str) -> None:
    sys.stderr.write(f"tsukuctl: {message}\n")
    if hint:
        sys.stderr.write(f"hint: {hint}\n")


if __name__ == "__main__":
    sys.exit(main())
