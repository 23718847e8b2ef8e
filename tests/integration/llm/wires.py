"""The three HTTP adapters side by side, for the contract tests: how to build each one
against its strict fake, how to script its fake in neutral terms (a text answer, tool
calls, an error of a given kind, broken replies), and how to read back, in neutral
terms, what the adapter sent. The contract tests then ask the same questions of all
three; adapter-specific behaviour stays in the adapter's own test file."""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx2

from tests.fakes import Reply
from tests.fakes import anthropic_server as A
from tests.fakes import gemini_server as G
from tests.fakes import openai_server as O
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.llm import CLAUDE_KEY, GEMINI_KEY, OPENAI_KEY, StrictFake
from tests.fakes.openai_server import FakeOpenAI
from tsukud.llm.claude import ClaudeProvider
from tsukud.llm.gemini import GeminiProvider
from tsukud.llm.openai_compat import OpenAICompatProvider
from tsukud.llm.provider import Provider, ProviderError

Call = tuple[str, str, dict[str, Any]]  # id, name, arguments
ERROR_KINDS = ("auth", "rate_limited", "overloaded", "server", "bad_request")


def _claude(url: str, client: httpx2.AsyncClient | None, timeout: float) -> Provider:
    return ClaudeProvider(CLAUDE_KEY, base_url=url, name="c1", http_client=client, timeout=timeout)


def _gemini(url: str, client: httpx2.AsyncClient | None, timeout: float) -> Provider:
    return GeminiProvider(
        GEMINI_KEY, base_url=url + "/", name="g1", http_client=client, timeout=timeout
    )


def _local(url: str, client: httpx2.AsyncClient | None, timeout: float) -> Provider:
    return OpenAICompatProvider(
        url,
        model="qwen2.5-coder:7b",
        api_key=OPENAI_KEY,
        name="l1",
        http_client=client,
        timeout=timeout,
    )


# ------------------------------------------------------------------- scripting


def _claude_say(fake: Any, text: str, tokens: tuple[int, int], delay: float) -> None:
    fake.reply([A.text(text)], usage_=A.usage(*tokens), delay=delay)


def _gemini_say(fake: Any, text: str, tokens: tuple[int, int], delay: float) -> None:
    fake.reply([G.text(text)], usage_=G.usage(*tokens), delay=delay)


def _local_say(fake: Any, text: str, tokens: tuple[int, int], delay: float) -> None:
    fake.reply(text, prompt_tokens=tokens[0], completion_tokens=tokens[1], delay=delay)


def _claude_call(fake: Any, calls: list[Call]) -> None:
    fake.reply([A.tool_use(*c) for c in calls], "tool_use")


def _gemini_call(fake: Any, calls: list[Call]) -> None:
    fake.reply([G.function_call(name, args, id=id) for id, name, args in calls])


def _local_call(fake: Any, calls: list[Call]) -> None:
    fake.reply(None, [O.tool_call(*c) for c in calls], "tool_calls")


def _claude_bad_arguments(fake: Any) -> None:
    fake.reply([A.tool_use("toolu_bad", "fetch_file", '{"path": ')], "tool_use")


def _gemini_bad_arguments(fake: Any) -> None:
    fake.reply([G.function_call("fetch_file", "not an object", id="fc-bad")])


def _local_bad_arguments(fake: Any) -> None:
    fake.reply(None, [O.tool_call("call_bad", "fetch_file", '{"path": ')], "tool_calls")


def _claude_error(fake: Any, kind: str, leak: str) -> None:
    status, kind_name, headers = {
        "auth": (401, "authentication_error", {}),
        "rate_limited": (429, "rate_limit_error", {"retry-after": "7"}),
        "overloaded": (529, "overloaded_error", {}),
        "server": (500, "api_error", {}),
        "bad_request": (400, "invalid_request_error", {}),
    }[kind]
    fake.error(status, kind_name, f"refused {leak}", headers=headers)


def _gemini_error(fake: Any, kind: str, leak: str) -> None:
    if kind == "auth":  # Gemini's answer to a bad key: 400 with ErrorInfo API_KEY_INVALID
        fake.error(400, "INVALID_ARGUMENT", f"API key not valid {leak}", reason="API_KEY_INVALID")
        return
    code, status = {
        "rate_limited": (429, "RESOURCE_EXHAUSTED"),
        "overloaded": (503, "UNAVAILABLE"),
        "server": (500, "INTERNAL"),
        "bad_request": (400, "INVALID_ARGUMENT"),
    }[kind]
    retry = "7s" if kind == "rate_limited" else None
    fake.error(code, status, f"refused {leak}", retry_delay=retry)


def _local_error(fake: Any, kind: str, leak: str) -> None:
    status, headers = {
        "auth": (401, {}),
        "rate_limited": (429, {"retry-after": "7"}),
        "overloaded": (503, {}),
        "server": (500, {}),
        "bad_request": (400, {}),
    }[kind]
    fake.error(status, f"refused {leak}", headers=headers)


def truncated_body(fake: StrictFake) -> None:
    """A 200 whose body stops half-way: chunked, then the connection closes."""
    fake.push(
        Reply(
            body=b'1000\r\n{"id": "msg_01", "content": [',
            headers={
                "content-type": "application/json",
                "transfer-encoding": "chunked",
                "connection": "close",
            },
        )
    )


def html_body(fake: StrictFake) -> None:
    """A 200 that is not JSON at all (a proxy's login page, a captive portal)."""
    fake.push(
        Reply(body=b"<html><body>Sign in</body></html>", headers={"content-type": "text/html"})
    )


# --------------------------------------------------------------------- reading


def error_texts(err: ProviderError) -> list[str]:
    """Every way an error is shown: message, repr, hint, wire form, traceback."""
    return [
        str(err),
        repr(err),
        err.hint or "",
        json.dumps(err.to_wire()),
        "".join(traceback.format_exception(err)),
    ]


def _claude_results(body: dict[str, Any]) -> list[tuple[str, str, bool]]:
    turn = body["messages"][-1]
    return [
        (b["tool_use_id"], b["content"], b["is_error"])
        for b in turn["content"]
        if b["type"] == "tool_result"
    ]


def _gemini_results(body: dict[str, Any]) -> list[tuple[str, str, bool]]:
    out = []
    for part in body["contents"][-1]["parts"]:
        if "functionResponse" in part:
            response = part["functionResponse"]
            (kind, content), *_ = response["response"].items()
            out.append((response["id"], content, kind == "error"))
    return out


def _local_results(body: dict[str, Any]) -> list[tuple[str, str, bool]]:
    return [
        (m["tool_call_id"], m["content"].removeprefix("ERROR: "), m["content"].startswith("ERROR"))
        for m in body["messages"]
        if m["role"] == "tool"
    ]


def _claude_choice(body: dict[str, Any]) -> Any:
    return body["tool_choice"]


def _gemini_choice(body: dict[str, Any]) -> Any:
    return body["toolConfig"]["functionCallingConfig"]


def _local_choice(body: dict[str, Any]) -> Any:
    return body["tool_choice"]


@dataclass(frozen=True)
class Wire:
    name: str
    kind: str
    key: str
    key_hint: str
    fake: type[StrictFake]
    build: Callable[[str, httpx2.AsyncClient | None, float], Provider]
    _say: Callable[[Any, str, tuple[int, int], float], None]
    call: Callable[[Any, list[Call]], None]
    bad_arguments: Callable[[Any], None]
    error: Callable[[Any, str, str], None]
    results_sent: Callable[[dict[str, Any]], list[tuple[str, str, bool]]]
    choice_sent: Callable[[dict[str, Any]], Any]
    choices: dict[str, Any]
    """The wire form of ToolChoice auto / any / tool(extract_pattern) / none."""

    def __str__(self) -> str:
        return self.name

    def say(
        self, fake: StrictFake, text: str, tokens: tuple[int, int] = (10, 5), delay: float = 0.0
    ) -> None:
        """Script a plain text answer with this usage, after ``delay`` seconds."""
        self._say(fake, text, tokens, delay)


WIRES = [
    Wire(
        "c1",
        "ClaudeProvider",
        CLAUDE_KEY,
        "ANTHROPIC_API_KEY",
        FakeAnthropic,
        _claude,
        _claude_say,
        _claude_call,
        _claude_bad_arguments,
        _claude_error,
        _claude_results,
        _claude_choice,
        {
            "auto": {"type": "auto"},
            "any": {"type": "any"},
            "tool": {"type": "tool", "name": "extract_pattern"},
            "none": {"type": "none"},
        },
    ),
    Wire(
        "g1",
        "GeminiProvider",
        GEMINI_KEY,
        "GOOGLE_API_KEY",
        FakeGemini,
        _gemini,
        _gemini_say,
        _gemini_call,
        _gemini_bad_arguments,
        _gemini_error,
        _gemini_results,
        _gemini_choice,
        {
            "auto": {"mode": "AUTO"},
            "any": {"mode": "ANY"},
            "tool": {"mode": "ANY", "allowedFunctionNames": ["extract_pattern"]},
            "none": {"mode": "NONE"},
        },
    ),
    Wire(
        "l1",
        "OpenAICompatProvider",
        OPENAI_KEY,
        "local OpenAI-compatible server",
        FakeOpenAI,
        _local,
        _local_say,
        _local_call,
        _local_bad_arguments,
        _local_error,
        _local_results,
        _local_choice,
        {
            "auto": "auto",
            "any": "required",
            "tool": {"type": "function", "function": {"name": "extract_pattern"}},
            "none": "none",
        },
    ),
]
