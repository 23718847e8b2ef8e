"""``tsukuctl completion bash|zsh|fish``: print the shell's completion script.

The scripts are files in the package, generated ahead of time from the parser
(``scripts/gen_completions.py``), so this command only reads one: completing a word in
the shell never runs Python. Standard library only.
"""

from __future__ import annotations

import argparse
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SHELLS = ("bash", "zsh", "fish")
LOAD = {
    "bash": "source <(tsukuctl completion bash)",
    "zsh": "source <(tsukuctl completion zsh)",
    "fish": "tsukuctl completion fish | source",
}


def script(shell: str) -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "completions", f"tsukuctl.{shell}"), encoding="utf-8") as f:
        return f.read()


def cmd_completion(args: argparse.Namespace) -> int:
    sys.stdout.write(script(args.shell))  # a script, printed as written (tabs, quotes)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "completion",
        help="print the completion script for bash, zsh or fish",
        description="Print tsukuctl's completion script for SHELL. Load it from your rc file: "
        + "; ".join(f"{shell}: {line}" for shell, line in LOAD.items())
        + " (zsh: after compinit).",
    )
    p.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    p.set_defaults(fn=cmd_completion)
