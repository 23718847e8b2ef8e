"""Which product modules name a thing: the count issue 27 measures (``grep -rli NAME
tsukud`` outside ``tsukud/testing/``), shared by the ecosystem and provider tests."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def mentions(name: str) -> set[str]:
    """The product modules (``tsukud/testing`` aside) whose text names ``name``."""
    found = set()
    for path in (REPO / "tsukud").rglob("*.py"):
        rel = path.relative_to(REPO).as_posix()
        if not rel.startswith("tsukud/testing/") and name in path.read_text().lower():
            found.add(rel)
    return found
