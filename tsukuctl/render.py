"""Turning results into text for people, CSV and JSON lines for machines."""

from __future__ import annotations

import os

from tsukud import wirejson  # json's import (re) would double `tsukuctl status`'s time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


def table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], *, right: frozenset[int] = frozenset()
) -> str:
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for r in cells:
        parts = [
            r[i].rjust(widths[i]) if i in right else r[i].ljust(widths[i]) for i in range(len(r))
        ]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def money(usd: float | None) -> str:
    if usd is None:
        return "unknown"
    if usd and abs(usd) < 0.01:
        return f"${usd:.4f}"
    return f"${usd:.2f}"


def duration(seconds: float) -> str:
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}d{h}h{m}m"
    if h:
        return f"{h}h{m}m{s}s"
    if m:
        return f"{m}m{s}s"
    return f"{seconds:.1f}s"


def compact(payload: dict[str, Any], width: int) -> str:
    text = " ".join(
        f"{k}={wirejson.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v}"
        for k, v in payload.items()
    )
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def term_width() -> int:
    try:
        return os.get_terminal_size().columns
    except OSError:  # not a terminal: wide enough for a log or a pipe
        return 120


def csv_text(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    import csv  # only --csv pays for it
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(headers)
    w.writerows(rows)
    return buf.getvalue()


def jsonl(obj: Any) -> str:
    return wirejson.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def source_text(source: str) -> str:
    """A setting's source in words: flag, your environment, tsukud's environment (the
    one it was started with), the config file, or the default."""
    kind, _, name = source.partition(":")
    if kind == "caller":
        return f"your environment (${name})"
    if kind == "env":
        return f"tsukud's environment (${name})"
    if kind.startswith("file"):
        return "config file" + kind[4:]
    return kind
