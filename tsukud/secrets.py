"""Keeping API keys out of everything we write.

Every sink the daemon owns (log lines, event payloads, error frames) passes its text
through one ``Redactor`` that knows the secret values currently configured. Scrubbing
by value, not only by field name, is what catches a key echoed inside an upstream error
message or a URL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"

# Field names whose values are never written, whatever they hold.
_SECRET_NAME = re.compile(
    r"(api[_-]?key|secret|password|authorization|credentials?|(^|[_-])token)$", re.I
)

# Values shorter than this are not scrubbed by value: replacing "a" everywhere would
# destroy the log without protecting anything real.
_MIN_SECRET_LEN = 8


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


class Redactor:
    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._values: tuple[str, ...] = ()
        self.update(secrets)

    def update(self, secrets: Iterable[str]) -> None:
        values = {s for s in secrets if s and len(s) >= _MIN_SECRET_LEN}
        # Longest first so a key that contains another is replaced whole.
        self._values = tuple(sorted(values, key=len, reverse=True))

    def add(self, secret: str) -> None:
        self.update((*self._values, secret))

    def __bool__(self) -> bool:
        return bool(self._values)

    def text(self, s: str) -> str:
        for v in self._values:
            if v in s:
                s = s.replace(v, REDACTED)
        return s

    def value(self, obj: Any, _key: str = "") -> Any:
        """Scrub a JSON-like structure: secret-named fields and secret values."""
        if _key and is_secret_name(_key) and isinstance(obj, str) and obj:
            return REDACTED
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {k: self.value(v, str(k)) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.value(v) for v in obj]
        return obj


# The daemon's process-wide redactor; config loading fills it.
REDACTOR = Redactor()
