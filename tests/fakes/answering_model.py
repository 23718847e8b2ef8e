"""A fake Anthropic model that answers create's questions from the known answers, with
a known error rate: what ``tsukuctl eval`` is tested against offline.

It speaks the real Messages API (the strict :class:`FakeAnthropic`: every request is
checked against the API's rules) and reads each request as a model would: the
repository in the first user message decides which answer it knows, and whether the
conversation holds a repair (a plain-text user message after the first, the pipeline's
feedback) decides whether it has been told it was wrong. For the repositories in
``wrong_first`` it insists on an answer naming an asset the release does not have until
it is told, then answers right: so such a tool fails with ``--repairs 0`` and passes
after exactly one repair. Every reply bills the same tokens, and the fake keeps the
bill (tokens sent back in ``usage``), so a test can hold the ledger to it.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable
from typing import Any

from tests.fakes import anthropic_server as anth
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.http import RecordedRequest, Reply

INPUT_TOKENS = 3000
OUTPUT_TOKENS = 150
_REPO = re.compile(r"^Repository: (\S+)$", re.MULTILINE)


def chosen(repos: Iterable[str], rate: float) -> frozenset[str]:
    """The ``rate`` share of ``repos`` (rounded) a fake gets wrong first: the first by
    a hash of the name, so the choice is fixed and spread over the corpus."""
    ordered = sorted(repos, key=lambda r: hashlib.sha256(r.lower().encode()).hexdigest())
    return frozenset(r.lower() for r in ordered[: round(len(ordered) * rate)])


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]


class AnsweringAnthropic(FakeAnthropic):
    def __init__(self, answers: dict[str, dict[str, Any]], wrong_first: Iterable[str] = ()) -> None:
        """``answers``: repository (any case) -> its ``extract_pattern`` arguments."""
        super().__init__(fallback=self.answer)
        self.answers = {k.lower(): v for k, v in answers.items()}
        self.wrong_first = frozenset(r.lower() for r in wrong_first)
        self._lock = threading.Lock()
        self.billed_input = 0
        self.billed_output = 0
        self.replies = 0

    def bill_usd(self, input_per_mtok: float, output_per_mtok: float) -> float:
        """What the replies sent so far cost at these prices (USD per million tokens)."""
        return (self.billed_input * input_per_mtok + self.billed_output * output_per_mtok) / 1e6

    def answer(self, request: RecordedRequest) -> Reply:
        body = request.json()
        messages = body["messages"]
        first = "\n".join(_texts(messages[0]["content"]))
        found = _REPO.search(first)
        repo = found.group(1).lower() if found else ""
        told = any(_texts(m["content"]) for m in messages[1:] if m["role"] == "user")
        arguments = dict(self.answers[repo])
        if repo in self.wrong_first and not told:
            arguments["asset_pattern"] = "not-a-release-asset_{version}_{os}_{arch}.tar.gz"
        turn = sum(1 for m in messages if m["role"] == "assistant") + 1
        with self._lock:
            self.billed_input += INPUT_TOKENS
            self.billed_output += OUTPUT_TOKENS
            self.replies += 1
        return Reply(
            json=anth.message(
                [anth.tool_use(f"toolu_{turn:02d}", "extract_pattern", arguments)],
                "tool_use",
                usage_=anth.usage(INPUT_TOKENS, OUTPUT_TOKENS),
            ),
            headers={"request-id": f"req_answer_{turn}"},
        )
