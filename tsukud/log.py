"""Structured JSON logs with rotation, scrubbed of secrets.

structlog renders one JSON object per line; the stdlib's RotatingFileHandler does the
rotation, so a busy daemon never fills the disk. The redaction processor is last before
rendering, so no code path can add a field after scrubbing.
"""

from __future__ import annotations

import logging
import logging.handlers
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import structlog

from tsukud.secrets import REDACTOR, Redactor

_LOGGER_NAME = "tsukud"


def _redact(redactor: Redactor) -> Any:
    def processor(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
        return {k: redactor.value(v, k) for k, v in event_dict.items()}

    return processor


def configure(
    path: Path,
    *,
    level: str = "info",
    max_bytes: int = 10 * 1024 * 1024,
    backups: int = 5,
    to_stderr: bool = False,
    redactor: Redactor = REDACTOR,
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    handlers: list[logging.Handler] = [
        logging.handlers.RotatingFileHandler(
            path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
        )
    ]
    if to_stderr:
        handlers.append(logging.StreamHandler(sys.stderr))
    std = logging.getLogger(_LOGGER_NAME)
    for h in list(std.handlers):
        std.removeHandler(h)
        h.close()
    for h in handlers:
        h.setFormatter(logging.Formatter("%(message)s"))
        std.addHandler(h)
    std.propagate = False
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    std.setLevel(numeric)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _redact(redactor),
            structlog.processors.JSONRenderer(),
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        cache_logger_on_first_use=False,
    )


def get() -> Any:
    return structlog.get_logger(_LOGGER_NAME)


def close() -> None:
    for h in list(logging.getLogger(_LOGGER_NAME).handlers):
        h.flush()
        h.close()
