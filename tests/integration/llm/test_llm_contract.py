"""One contract for the three HTTP adapters (Claude, Gemini, OpenAI-compatible), through
their real SDKs and HTTP clients against strict loopback fakes: the same neutral request
gives the same neutral Response, the same failure the same typed error, and the key
never shows. What only one adapter does is tested in its own file."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx2
import pytest
import trio

from tests.fakes import Reply
from tests.fakes.llm import CANARIES, EXTRACT, FETCH, StrictFake
from tests.integration.llm.wires import (
    ERROR_KINDS,
    WIRES,
    Wire,
    error_texts,
    html_body,
    truncated_body,
)
from tsukud.errors import ProviderUnavailable
from tsukud.llm.provider import (
    MalformedToolArguments,
    Provider,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderOverloaded,
    ProviderRateLimited,
    ProviderRequestError,
    ProviderServerError,
    ProviderTimeout,
)
from tsukud.llm.types import (
    Request,
    StopReason,
    ToolChoice,
    ToolResult,
    ToolResultsMessage,
    Usage,
    UserMessage,
)

ASK = UserMessage("Pick the linux/amd64 asset for stern/stern")

pytestmark = pytest.mark.parametrize("wire", WIRES, ids=str)


@pytest.fixture
def fake(wire: Wire) -> Iterator[StrictFake]:
    with wire.fake() as server:
        yield server


@pytest.fixture
async def provider(wire: Wire, fake: StrictFake) -> AsyncIterator[Provider]:
    adapter = wire.build(fake.url, None, 5.0)
    yield adapter
    await adapter.aclose()


async def test_text_answer(wire: Wire, fake: StrictFake, provider: Provider) -> None:
    wire.say(fake, "stern_{version}_linux_amd64.tar.gz", (1000, 200))
    response = await provider.complete(Request(messages=(ASK,), system="You write recipes."))
    assert response.text == "stern_{version}_linux_amd64.tar.gz"
    assert (response.stop_reason, response.tool_calls) == (StopReason.END_TURN, ())
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1000, 200)
    assert response.provider == wire.name and response.model == provider.model


async def test_tool_calls_and_their_results(
    wire: Wire, fake: StrictFake, provider: Provider
) -> None:
    wire.call(
        fake,
        [
            ("call_1", "fetch_file", {"path": "README.md"}),
            ("call_2", "fetch_file", {"path": "Cargo.toml"}),
        ],
    )
    wire.say(fake, "done")
    tools = (FETCH, EXTRACT)
    first = await provider.complete(Request(messages=(ASK,), tools=tools))
    assert first.stop_reason is StopReason.TOOL_USE
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("call_1", "fetch_file", {"path": "README.md"}),
        ("call_2", "fetch_file", {"path": "Cargo.toml"}),
    ]
    results = ToolResultsMessage(
        (ToolResult("call_1", "# stern"), ToolResult("call_2", "not found", is_error=True))
    )
    # Results and a new instruction: the strict fake checks pairing and turn order.
    history = (ASK, first.message, results)
    second = await provider.complete(Request(messages=history, tools=tools))
    assert second.text == "done" and second.stop_reason is StopReason.END_TURN
    assert wire.results_sent(fake.last_json()) == [
        ("call_1", "# stern", False),
        ("call_2", "not found", True),
    ]


@pytest.mark.parametrize("mode", ["auto", "any", "tool", "none"])
async def test_tool_choice(wire: Wire, fake: StrictFake, provider: Provider, mode: str) -> None:
    choice = ToolChoice.tool("extract_pattern") if mode == "tool" else ToolChoice(mode)  # type: ignore[arg-type]
    wire.say(fake, "ok")
    await provider.complete(Request(messages=(ASK,), tools=(FETCH, EXTRACT), tool_choice=choice))
    assert wire.choice_sent(fake.last_json()) == wire.choices[mode]


async def test_malformed_tool_arguments_are_billed(
    wire: Wire, fake: StrictFake, provider: Provider
) -> None:
    wire.bad_arguments(fake)
    with pytest.raises(MalformedToolArguments) as info:
        await provider.complete(Request(messages=(ASK,), tools=(FETCH,)))
    err = info.value
    assert err.retryable and err.tool_name == "fetch_file" and err.call_id
    assert err.usage == Usage(10, 5) and err.model  # the call was paid for: the ledger prices it


@pytest.mark.parametrize("kind", ERROR_KINDS)
async def test_error_answers_are_typed(
    wire: Wire, fake: StrictFake, provider: Provider, kind: str
) -> None:
    expected: type[ProviderError] = {
        "auth": ProviderAuthError,
        "rate_limited": ProviderRateLimited,
        "overloaded": ProviderOverloaded,
        "server": ProviderServerError,
        "bad_request": ProviderRequestError,
    }[kind]
    wire.error(fake, kind, wire.key)  # servers echo keys; the error must not
    with pytest.raises(expected) as info:
        await provider.complete(Request(messages=(ASK,)))
    err = info.value
    assert type(err) is expected and err.provider == wire.name
    assert (
        err.retryable
        == isinstance(err, ProviderUnavailable)
        == (kind not in ("auth", "bad_request"))
    )
    if kind == "rate_limited":
        assert err.retry_after == 7.0  # type: ignore[attr-defined]
    if kind == "auth":
        assert wire.key_hint in (err.hint or "")
    assert all(wire.key not in text for text in error_texts(err))
    assert len(fake.requests) == 1  # no retry behind the caller's back


async def test_timeout(wire: Wire, fake: StrictFake) -> None:
    slow = wire.build(fake.url, None, 0.3)
    wire.say(fake, "late", delay=3)
    started = trio.current_time()
    try:
        with pytest.raises(ProviderTimeout) as info:
            await slow.complete(Request(messages=(ASK,)))
    finally:
        await slow.aclose()
    assert trio.current_time() - started < 2 and info.value.retryable


async def test_cancel_scope_cancels_the_call(
    wire: Wire, fake: StrictFake, provider: Provider
) -> None:
    wire.say(fake, "late", delay=5)
    started = trio.current_time()
    with trio.move_on_after(0.2) as scope:
        await provider.complete(Request(messages=(ASK,)))
    assert scope.cancelled_caught and trio.current_time() - started < 1
    wire.say(fake, "again")  # the adapter stays usable
    assert (await provider.complete(Request(messages=(ASK,)))).text == "again"


async def test_connection_refused_or_dropped(
    wire: Wire, fake: StrictFake, provider: Provider
) -> None:
    nobody = wire.build("http://127.0.0.1:9", None, 2.0)
    try:
        with pytest.raises(ProviderConnectionError):
            await nobody.complete(Request(messages=(ASK,)))
    finally:
        await nobody.aclose()
    fake.push(Reply(disconnect=True))
    with pytest.raises(ProviderConnectionError) as info:
        await provider.complete(Request(messages=(ASK,)))
    assert info.value.retryable


async def test_connection_dropped_mid_body(
    wire: Wire, fake: StrictFake, provider: Provider
) -> None:
    """The status line said 200 and the body broke off: nothing was answered, so it is a
    retryable connection error (the breaker counts it, failover may try another)."""
    truncated_body(fake)
    with pytest.raises(ProviderConnectionError) as info:
        await provider.complete(Request(messages=(ASK,)))
    assert info.value.retryable and isinstance(info.value, ProviderUnavailable)
    assert all(wire.key not in text for text in error_texts(info.value))


async def test_non_json_200(wire: Wire, fake: StrictFake, provider: Provider) -> None:
    html_body(fake)
    with pytest.raises(ProviderServerError) as info:
        await provider.complete(Request(messages=(ASK,)))
    assert info.value.retryable and "not a JSON object" in info.value.message


async def test_repr_and_clients(wire: Wire, fake: StrictFake) -> None:
    """A repr that says where the adapter talks and never the key; its own HTTP client
    is closed with it, a client the caller lent is left open."""
    own = wire.build(fake.url, None, 5.0)
    assert own.name == wire.name and own.model
    shown = repr(own)
    assert shown.startswith(f"{wire.kind}(name={wire.name!r}, model={own.model!r}, url=")
    assert fake.url in shown and all(canary not in shown for canary in CANARIES)
    wire.say(fake, "ok")
    assert (await own.complete(Request(messages=(ASK,)))).text == "ok"
    await own.aclose()
    assert own._http.is_closed  # type: ignore[attr-defined]

    async with httpx2.AsyncClient() as client:
        lent = wire.build(fake.url, client, 5.0)
        wire.say(fake, "ok")
        assert (await lent.complete(Request(messages=(ASK,)))).text == "ok"
        await lent.aclose()
        assert not client.is_closed
