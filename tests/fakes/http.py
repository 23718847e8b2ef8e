"""The fake HTTP server base, now in the package (``tsukud.testing.http``) because the
fake GitHub the offline demo serves is built on it. Re-exported for the tests."""

from tsukud.testing.http import (
    FakeHTTPServer,
    RecordedRequest,
    Reply,
    Responder,
    Violation,
    take_violations,
)

__all__ = [
    "FakeHTTPServer",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Violation",
    "take_violations",
]
