"""A fake Anthropic model that answers discovery's question from the known sources, with
known errors: what ``tsukuctl eval discover`` is tested against offline.

It speaks the real Messages API (the strict :class:`FakeAnthropic`: every request is
checked against the API's rules) and reads each request as a model would: the tool in
the first user message ("Find the official source repository for: <tool>") decides the
answer. Each reply is one turn: a server-side web search whose results link to the
repositories it names, then ``extract_source``:

* a tool in ``wrong`` gets another tool's repository (one that exists and verifies:
  a wrong source discovery proposes);
* a tool in ``unfound`` gets no extraction, only "I could not find it" (not found);
* a tool in ``doubled`` gets its right repository and another one (a numbered choice);
* any other tool its right repository.

Every reply bills the same tokens and one search, and the fake keeps the bill.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import Any

from tests.fakes import anthropic_server as anth
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.http import RecordedRequest, Reply

INPUT_TOKENS = 2400
OUTPUT_TOKENS = 180
_TOOL = re.compile(r"Find the official source repository for: (\S+)")


class DiscoveringAnthropic(FakeAnthropic):
    def __init__(
        self,
        sources: dict[str, str],
        *,
        wrong: Iterable[str] = (),
        unfound: Iterable[str] = (),
        doubled: Iterable[str] = (),
    ) -> None:
        """``sources``: tool -> its right ``owner/repo``."""
        super().__init__(fallback=self.answer)
        self.sources = dict(sources)
        self.wrong, self.unfound, self.doubled = set(wrong), set(unfound), set(doubled)
        self._lock = threading.Lock()
        self.replies = 0
        self.searches = 0
        self.billed_input = 0
        self.billed_output = 0

    def bill_usd(self, input_per_mtok: float, output_per_mtok: float, per_search: float) -> float:
        """What the replies sent so far cost at these prices."""
        tokens = self.billed_input * input_per_mtok + self.billed_output * output_per_mtok
        return tokens / 1e6 + self.searches * per_search

    def other(self, tool: str) -> str:
        """Another tool's repository: the next one in the order of the tools."""
        tools = sorted(self.sources)
        return self.sources[tools[(tools.index(tool) + 1) % len(tools)]]

    def answer(self, request: RecordedRequest) -> Reply:
        first = request.json()["messages"][0]["content"]
        text = first if isinstance(first, str) else " ".join(b.get("text", "") for b in first)
        found = _TOOL.search(text)
        tool = found.group(1) if found else ""
        right = self.sources[tool]
        if tool in self.wrong:
            named = [self.other(tool)]
        elif tool in self.unfound:
            named = []
        elif tool in self.doubled:
            named = [right, self.other(tool)]
        else:
            named = [right]
        content: list[dict[str, Any]] = [anth.server_tool_use("srvtoolu_01", f"{tool} github")]
        content.append(
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_01",
                "content": [
                    {
                        "type": "web_search_result",
                        "url": f"https://github.com/{repo}",
                        "title": f"{repo} - GitHub",
                        "encrypted_content": "EqgfCioIARgBIiQ3YTAw+opaque/==",
                        "page_age": "May 12, 2025",
                    }
                    for repo in named or [right]
                ],
            }
        )
        for i, repo in enumerate(named, 1):
            content.append(
                anth.tool_use(
                    f"toolu_0{i}",
                    "extract_source",
                    {
                        "builder": "github",
                        "source": repo,
                        "confidence": 90,
                        "evidence": [f"https://github.com/{repo} is titled '{repo} - GitHub'"],
                        "reasoning": f"{repo} publishes {tool}'s releases.",
                    },
                )
            )
        if not named:
            content.append(anth.text(f"I could not find a reliable source for {tool}."))
        with self._lock:
            self.replies += 1
            self.searches += 1
            self.billed_input += INPUT_TOKENS
            self.billed_output += OUTPUT_TOKENS
        return Reply(
            json=anth.message(
                content,
                "tool_use" if named else "end_turn",
                usage_=anth.usage(INPUT_TOKENS, OUTPUT_TOKENS, web_searches=1),
            ),
            headers={"request-id": f"req_discover_{self.replies}"},
        )
