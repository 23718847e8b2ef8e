"""Progress on stderr, shaped by where it goes.

Long work must look alive: a download shows its size, speed and time left, and every
stage the daemon reports appears as it happens. How depends on the stream:

* a terminal: one line redrawn in place (``\\r`` and erase-line) for what changes by
  the second (a download's bytes), a permanent line per finished stage; colour unless
  ``NO_COLOR`` is set (https://no-color.org);
* ``TERM=dumb``, a pipe or a file: no redraws and no colour, plain lines, one per stage;
  a download gets a line when it ends, and one when it starts if it takes longer than
  :data:`ANNOUNCE_S`, then its running numbers at most every :data:`THROTTLE_S` seconds;
* ``quiet``: nothing (errors still reach stderr through the command's own path).

Standard library only, like the whole client. The daemon's progress frames are
described in schema/rpc.md; :class:`Progress` turns them into lines.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections import deque

from tsukud.terminal import terminal_safe

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TextIO

THROTTLE_S = 5.0  # between two lines about one download where nothing is redrawn
ANNOUNCE_S = 1.0  # a download that takes longer gets a plain line when it starts
SMOOTHING_S = 3.0  # the speed is measured over this many seconds
MIN_SPAN_S = 0.5  # and not shown before it covers this long
_TONES = {"ok": "32", "warn": "33", "bold": "1", "dim": "2"}


class Style:
    """What a stream can take: redrawn lines (a terminal that is not ``dumb``) and
    colour (such a terminal, without ``NO_COLOR``)."""

    def __init__(self, *, live: bool, color: bool) -> None:
        self.live = live
        self.color = color

    @classmethod
    def of(cls, stream: TextIO, env: Mapping[str, str] | None = None) -> Style:
        env = os.environ if env is None else env
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):  # a closed or exotic stream
            tty = False
        live = tty and env.get("TERM", "") != "dumb"
        return cls(live=live, color=live and not env.get("NO_COLOR"))

    def paint(self, text: str, tone: str | None) -> str:
        code = _TONES.get(tone or "")
        return f"\x1b[{code}m{text}\x1b[0m" if code and self.color else text


class Display:
    """Lines on one stream: permanent ones, and (on a live terminal) one redrawn line."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        quiet: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.style = Style.of(self.stream, env)
        self.quiet = quiet
        self._live = False

    def line(self, text: str, tone: str | None = None) -> None:
        """A permanent line (replacing the redrawn one, if any)."""
        if self.quiet:
            return
        self._end_live()
        self.stream.write(self.style.paint(terminal_safe(text), tone) + "\n")
        self.stream.flush()

    def redraw(self, text: str) -> None:
        """Show ``text`` in place of the previous redrawn line; cut to the terminal's
        width, since a wrapped line cannot be redrawn. Only on a live terminal."""
        if self.quiet or not self.style.live:
            return
        text = terminal_safe(text, one_line=True)
        width = _columns(self.stream)
        if len(text) >= width:
            text = text[: max(0, width - 2)] + "…"
        self._live = True  # first: a Ctrl-C during the write still ends the line
        self.stream.write("\r\x1b[K" + text)
        self.stream.flush()

    def _end_live(self) -> None:
        if self._live:
            self.stream.write("\r\x1b[K")
            self._live = False

    def close(self) -> None:
        """Leave the redrawn line where it is and move below it (before an error or
        the cancellation line)."""
        if self._live:
            self.stream.write("\n")
            self.stream.flush()
            self._live = False


def _columns(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (OSError, ValueError, AttributeError):
        return 80


# ---- numbers ---------------------------------------------------------------------------


def size(n: float | None) -> str:
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def eta(seconds: float) -> str:
    s = max(0, math.ceil(seconds))
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"


class Rate:
    """Bytes per second over the last :data:`SMOOTHING_S` seconds: steady enough that
    the time left does not jump with every network hiccup, recent enough to follow a
    link that speeds up or slows down (an average since the start would not)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.started = clock()
        self._samples: deque[tuple[float, int]] = deque([(self.started, 0)])
        self.per_s: float | None = None

    def update(self, done: int) -> None:
        now = self.clock()
        samples = self._samples
        if done < samples[-1][1]:  # started over: the old samples say nothing now
            samples.clear()
        samples.append((now, done))
        while len(samples) > 2 and samples[1][0] <= now - SMOOTHING_S:
            samples.popleft()
        t0, d0 = samples[0]
        if now - t0 >= MIN_SPAN_S:  # a first burst is not a speed
            self.per_s = (done - d0) / (now - t0)

    def left(self, done: int, total: int | None) -> float | None:
        """Seconds to go, when the size is known and the speed is not zero."""
        if total is None or not self.per_s:
            return None
        return max(0, total - done) / self.per_s


def download_text(name: str, done: int, total: int | None, rate: Rate) -> str:
    """``downloading x.tar.gz  3.1 MB / 12.0 MB (25%)  2.4 MB/s  ETA 4s``; without a
    known size, the bytes so far and the speed."""
    parts = [f"downloading {name}"]
    if total:
        parts.append(f"{size(done)} / {size(total)} ({100 * done // total}%)")
    else:
        parts.append(size(done))
    if rate.per_s:
        parts.append(f"{size(rate.per_s)}/s")
    left = rate.left(done, total)
    if left is not None:
        parts.append(f"ETA {eta(left)}")
    return "  ".join(parts)


# ---- the daemon's frames ---------------------------------------------------------------


def left_alone_text(tool: str, p: Mapping[str, Any]) -> str:
    """One warning line: how many of a bottle's files keep a Homebrew placeholder, the
    first of them and which placeholders (the install record lists them all)."""
    count = int(p.get("count") or 0)
    files = [str(f) for f in p.get("files") or []]
    shown = ", ".join(files) + (", …" if count > len(files) else "")
    which = ", ".join(str(x) for x in p.get("placeholders") or [])
    noun = "file keeps" if count == 1 else "files keep"
    return (
        f"warning: {tool}: {count} {noun} a Homebrew placeholder that could not be "
        f"rewritten ({which}): {shown}"
    )


_AGAINST = {
    "github_digest": "GitHub's digest",
    "recipe": "the recipe",
    "checksum_file": "the release's checksum file",
    "cpan_checksums": "the CPAN mirror's CHECKSUMS",
}


class _Download:
    def __init__(self, clock: Callable[[], float]) -> None:
        self.rate = Rate(clock)
        self.shown = -math.inf  # when a plain line last told its numbers
        self.announced = False  # a plain line said it started
        self.finished = False


class Progress:
    """Renders ``install`` and ``create`` progress frames (and discovery's messages on
    the way) on stderr. ``ellipsis``: a stage's message ends with "…" (create's style)."""

    def __init__(
        self,
        quiet: bool = False,
        *,
        ellipsis: bool = False,
        display: Display | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.display = Display(quiet=quiet) if display is None else display
        self.ellipsis = ellipsis
        self.clock = clock
        self._downloads: dict[str, _Download] = {}

    def __call__(self, p: Any) -> None:
        if not isinstance(p, dict) or self.display.quiet:
            return
        stage = p.get("stage")
        tool = p.get("tool", "")
        line = self.display.line
        if stage == "resolving":
            wanted = f"@{p['requested']}" if p.get("requested") else ""
            line(f"resolving {tool}{wanted}…")
        elif stage == "downloading":
            self._download(p)
        elif stage == "verifying_checksum":
            pass
        elif stage == "verified_checksum":
            what = ", ".join(_AGAINST.get(c, c) for c in p.get("checked") or [])
            suffix = f" (matches {what})" if what else " (no published checksum to compare)"
            if not what and p.get("skip_verification_reason"):  # the recipe says why
                suffix = f" (not verified: {p['skip_verification_reason']})"
            line(f"sha256 {p.get('sha256', '')}{suffix}", "ok" if what else None)
        elif stage == "extracting":
            if p.get("streamed"):
                line(f"unpacked {p.get('file', '')} while downloading")
            else:
                line(f"extracting {p.get('file', '')}…")
        elif stage == "installing":
            line(f"installing {tool} {p.get('version', '')}…")
        elif stage == "verifying":
            line(f"verifying: {p.get('command', '')}")
        elif stage == "relocation_left_alone":
            line(left_alone_text(tool, p), "warn")
        elif p.get("message"):  # create's stages, discovery (no recipe yet)
            message = str(p["message"])
            line(f"{message}…" if self.ellipsis else message)

    def _download(self, p: dict[str, Any]) -> None:
        name = terminal_safe(str(p.get("file", "")), one_line=True)
        done = int(p.get("bytes") or 0)
        total = p.get("total")
        total = int(total) if isinstance(total, int) else None
        state = self._downloads.get(name)
        if state is None or (state.finished and done < (total or 1)):
            state = self._downloads[name] = _Download(self.clock)
        if state.finished:
            return
        state.rate.update(done)
        live = self.display.style.live
        if not live and not state.announced and self.clock() - state.rate.started >= ANNOUNCE_S:
            state.announced = True  # still going: say so (a quick one gets only its end)
            state.shown = self.clock()
            self.display.line(f"downloading {name} ({size(total)})…")
        if total is not None and done >= total:
            state.finished = True
            took = self.clock() - state.rate.started
            speed = f", {size(done / took)}/s" if took > 0.05 else ""
            self.display.line(f"downloaded {name} ({size(done)} in {took:.1f}s{speed})")
        elif live:
            self.display.redraw(download_text(name, done, total, state.rate))
        elif state.announced and self.clock() - state.shown >= THROTTLE_S:
            state.shown = self.clock()
            self.display.line(download_text(name, done, total, state.rate))

    def close(self) -> None:
        self.display.close()
