"""Shared pieces of the LLM fakes and tests: canary keys, two typical tools, and the
strict server base that refuses what the real API refuses."""

from __future__ import annotations

from typing import Any, ClassVar

from tests.fakes.http import FakeHTTPServer, RecordedRequest, Reply, Responder
from tsukud.llm.types import Tool

# Canary keys: shaped unlike real keys on purpose, so only the explicit-secret
# redaction (not the key-shape patterns) can keep them out of errors and logs.
CLAUDE_KEY = "canary-claude-key-5d1e8f0b7a"
GEMINI_KEY = "canary-gemini-key-93c1aa04e2"
OPENAI_KEY = "canary-local-key-2b77de51c9"
CANARIES = (CLAUDE_KEY, GEMINI_KEY, OPENAI_KEY)

FETCH = Tool(
    "fetch_file",
    "Read a text file of the repository at the release tag.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
EXTRACT = Tool(
    "extract_pattern",
    "Give the final asset pattern.",
    {
        "type": "object",
        "properties": {
            "asset_type": {"type": "string", "enum": ["archive", "binary"]},
            "asset_pattern": {"type": "string"},
        },
        "required": ["asset_type", "asset_pattern"],
    },
)


class StrictFake(FakeHTTPServer):
    """A fake provider that checks every request the way the real API does.

    A request the real service would refuse is answered with that service's 400 (the
    scripted reply stays queued: the model never saw the request) and recorded as a
    violation through the base's :meth:`reject` hook, one per reason: the tests'
    teardown check and leaving the ``with`` block then fail the test, unless it claims
    them with :meth:`take_violations`.
    """

    service: ClassVar[str] = ""
    """Who this fake plays, named in its violations."""
    endpoint: ClassVar[str] = ""
    """The API's one path; a request anywhere else is a 404 there."""

    def __init__(self, fallback: Responder | None = None) -> None:
        super().__init__(fallback, role=self.service)

    def violations_of(self, request: RecordedRequest) -> list[str]:
        if (request.method, request.route) != ("POST", self.endpoint):
            return [f"no such endpoint: {request.method} {request.path}"]
        return self.body_violations(request.json())

    def body_violations(self, body: Any) -> list[str]:
        raise NotImplementedError

    def rejection(self, problems: list[str]) -> Reply:
        """The refusal as the real API words it (its 400 body for the first reason)."""
        raise NotImplementedError

    def handle(self, request: RecordedRequest) -> Reply:
        try:
            problems = self.violations_of(request)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            problems = [f"the request could not be read as the API's JSON: {exc!r}"]
        if not problems:
            return super().handle(request)
        reply = self.rejection(problems)
        for problem in problems:
            self.reject(request, problem, reply)
        return reply
