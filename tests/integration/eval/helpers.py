"""What the eval tests share: the ledger's events, read with ``tsukuctl events``."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import Tsuku


def events(t: Tsuku, *types: str, session: str | None = None) -> list[dict[str, Any]]:
    args = ["events", "--json", "--limit", "0"]
    for ty in types:
        args += ["--type", ty]
    if session:
        args += ["--session", session]
    return [json.loads(x) for x in t.ctl(*args, check=True).stdout.splitlines()]
