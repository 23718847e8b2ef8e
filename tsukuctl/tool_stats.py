"""``--collect-tool-stats`` (create, install, discover): the model's tool calls as a
table on stderr. Standard library only."""

from __future__ import annotations

from tsukuctl import render
from tsukuctl.command import err

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def print_tool_stats(stats: list[dict[str, Any]]) -> None:
    if not stats:
        err("tool calls: none (no model was asked)")
        return
    rows = [
        [
            s["name"],
            s.get("path") or s.get("asset") or s.get("query") or "",
            s["duration_ms"],
            "ok" if s["ok"] else s.get("error_type") or "error",
            s.get("bytes") if s.get("bytes") is not None else "",
        ]
        for s in stats
    ]
    err(render.table(("TOOL", "ARGUMENT", "MS", "RESULT", "BYTES"), rows, right=frozenset({2, 4})))
