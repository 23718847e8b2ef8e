"""Local fake servers for integration tests (LLM providers today; reusable later).

Each fake is a real HTTP server on 127.0.0.1 driven by a per-test script of replies,
so the code under test runs through its real SDK and HTTP stack.
"""

from tests.fakes.http import FakeHTTPServer, RecordedRequest, Reply

__all__ = ["FakeHTTPServer", "RecordedRequest", "Reply"]
