"""What every command module shares: a call to the daemon, a line of output, a question.

Each ``*_commands.py`` module turns parsed arguments into an exit code with these, so
none of them needs ``cli`` (which only parses and dispatches) and ``cli`` imports only
the module of the command it runs. Standard library only, like the whole client.
"""

from __future__ import annotations

import sys

from tsukuctl import verbosity
from tsukuctl.client import Client
from tsukud.terminal import terminal_safe

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    import argparse  # not at run time: `status` is read without it (cli.hot_args)
    from typing import Any


def rpc(
    args: argparse.Namespace, method: str, params: dict[str, Any] | None = None, **kw: Any
) -> Any:
    """One call on a fresh connection; ``--no-start`` keeps a stopped daemon stopped."""
    with Client.connect(autostart=not getattr(args, "no_start", False)) as c:
        if not verbosity.verbose():
            return c.call(method, params, **kw)
        return _traced(c, method, params, **kw)


def _session(session: str) -> None:
    verbosity.debug(f"session {session} (tsukuctl events --session {session})")


def _traced(c: Client, method: str, params: dict[str, Any] | None, **kw: Any) -> Any:
    """``-v``: the call with where it went, how long it took and the session it ran as."""
    import time

    verbosity.debug(f"request {method} on {c.sock.getpeername()}")
    started = time.monotonic()
    try:
        res = c.call(method, params, **kw)
    except BaseException as exc:
        ms = (time.monotonic() - started) * 1000
        verbosity.debug(f"{method} failed after {ms:.1f} ms: {type(exc).__name__}")
        session = getattr(exc, "data", {}).get("session")
        if isinstance(session, str):  # the run it ended, to read with `events --session`
            _session(session)
        raise
    ms = (time.monotonic() - started) * 1000
    verbosity.debug(f"{method} answered in {ms:.1f} ms")
    if isinstance(res, dict):
        if res.get("session"):
            _session(res["session"])
        timings = res.get("timings_ms")
        if isinstance(timings, dict) and timings:
            verbosity.debug(
                "daemon timings: " + ", ".join(f"{k} {v} ms" for k, v in timings.items())
            )
    return res


def out(text: str) -> None:
    """A line on stdout. Whatever it holds (a model's recipe, a page title, an error from
    GitHub) reaches the terminal without escape sequences or control characters."""
    sys.stdout.write(terminal_safe(text) + "\n")


def err(text: str) -> None:
    """A line on stderr, made terminal-safe like :func:`out`."""
    sys.stderr.write(terminal_safe(text) + "\n")
    sys.stderr.flush()


def can_ask() -> bool:
    """Whether a question can be put to the user (both ends of the terminal)."""
    return sys.stdin.isatty() and sys.stderr.isatty()


def ask_on_terminal(question: dict[str, Any]) -> bool | int:
    """Answer a daemon's ``confirm`` frame with a y/N prompt; default no. A numbered
    choice (``choose``) is answered with the number picked (0: none)."""
    from tsukuctl.choose import choose_on_terminal, is_choice

    if is_choice(question):
        return choose_on_terminal(question)
    message = terminal_safe(str(question.get("message", "")))
    asked = terminal_safe(str(question.get("question", "Continue?")), one_line=True)
    sys.stderr.write(f"{message}\n{asked} [y/N] ")
    sys.stderr.flush()
    from tsukuctl.answer import read_line  # only when asked

    try:
        reply = read_line()
    except (OSError, KeyboardInterrupt):
        return False
    return reply.strip().lower() in ("y", "yes")


def add_provider_flags(p: argparse.ArgumentParser) -> None:
    """``--provider`` (tried first) and ``--only-provider``, for commands that ask an LLM."""
    p.add_argument(
        "--provider",
        help="LLM provider(s) to try first, e.g. claude or gemini,claude; "
        "the other configured ones take over if they fail",
    )
    p.add_argument(
        "--only-provider",
        action="store_true",
        default=None,
        help="use only the --provider (or llm.provider) ones, never fail over to others",
    )


def tool_names(action: argparse.Action, kind: str) -> argparse.Action:
    """Tab completion offers tool names for this argument (scripts/gen_completions.py):
    ``installed`` tools, or every ``known`` one (installed, local and registry recipes),
    read by the shell from the command index the daemon keeps (no Python runs)."""
    action.tsuku_completes = kind  # type: ignore[attr-defined]
    return action


def add_search_provider_flag(p: argparse.ArgumentParser) -> None:
    """``--search-provider``: the web search discovery's local models use (``discover``,
    ``install``, ``eval discover``)."""
    p.add_argument(
        "--search-provider",
        choices=("ddg", "tavily", "brave"),
        help="web search for local models (default: tavily/brave when keyed, else ddg)",
    )


def add_repairs_flag(p: argparse.ArgumentParser) -> None:
    """``--repairs 0|1|2``: how many LLM repairs a failed recipe gets (``create`` and
    ``eval create``), so the repair loop's value can be measured by turning it off."""
    p.add_argument(
        "--repairs",
        type=int,
        choices=(0, 1, 2),
        default=2,
        help="LLM repair attempts after a recipe fails its checks or validation (default 2)",
    )


def add_trust_page_hosts(p: argparse.ArgumentParser) -> None:
    """``--trust-page-hosts``: what ``--yes`` alone never accepts for a recipe read from
    an install page (docs/discovery.md, "What a page may decide")."""
    p.add_argument(
        "--trust-page-hosts",
        action="store_true",
        help="a recipe read from an install page may download from hosts and install "
        "packages its repository does not name, without showing them first (--yes alone "
        "accepts only the repository's own)",
    )


def _bad_value(message: str) -> Exception:
    """argparse's error for a value its ``type`` refused (argparse is loaded by then: it
    is the caller)."""
    import argparse

    return argparse.ArgumentTypeError(message)


def count(text: str) -> int:
    """An argparse ``type``: a whole number, 0 or more. A bad one is a usage error (exit
    2, with the command's usage) before anything reaches the daemon."""
    try:
        n = int(text)
    except ValueError:
        raise _bad_value(f"{text!r} is not a whole number") from None
    if n < 0:
        raise _bad_value(f"{text} is negative: give 0 or more")
    if n > MAX_COUNT:
        raise _bad_value(f"{text} is too large: give at most {MAX_COUNT}")
    return n


#: The largest count the daemon takes (SQLite's largest integer).
MAX_COUNT = 2**63 - 1


def usd(text: str) -> float:
    """An amount in USD for argparse (``--max-usd``): finite and not negative."""
    try:
        value = float(text)
    except ValueError:
        raise _bad_value(f"not an amount in USD: {text!r}") from None
    if not (value >= 0 and value != float("inf")):
        raise _bad_value(f"not an amount in USD: {text!r}")
    return value


def head_hash(text: str) -> str:
    """An argparse ``type``: a ledger head as ``events verify`` prints it (16 to 64 hex
    digits, the daemon's rule), so a mistyped one is a usage error, not a protocol one."""
    head = text.strip().lower()
    if not 16 <= len(head) <= 64 or head.strip("0123456789abcdef"):
        raise _bad_value(
            f"{text!r} is not a head: give the 16 to 64 hex digits `events verify` printed"
        )
    return head
