"""Provider-neutral conversation types.

The conversation loop (``create/session.py``), the event ledger and the record/replay
wrapper all speak these Structs, so a session can move between the providers
(``llm/providers.py``) without the loop knowing which one answered. Each adapter translates them
to its wire format and back.

Provider-specific content that must go back to the same provider unchanged (server
tool use and its results, thinking blocks, thought signatures: each adapter's module
says which) travels as :class:`ProviderBlock`: an opaque JSON object tagged
with the provider that produced it. Adapters send their own blocks back verbatim and
drop other providers' blocks, which they could not interpret anyway.
"""

from __future__ import annotations

import enum
from typing import Any, Literal

import msgspec

ProviderName = str
"""A provider spec's ``tag`` (``provider_specs.LLM_PROVIDERS``): who produced an opaque block."""


class ProviderBlock(msgspec.Struct, frozen=True, tag="provider_block"):
    """A content block only its own provider understands, kept byte-for-byte.

    Also used as the ``raw`` of a :class:`TextPart` or :class:`ToolCall` when the
    provider attached fields the neutral form cannot hold (citations, signatures,
    a missing call id); the adapter then resends ``data`` instead of rebuilding it.
    """

    provider: ProviderName
    data: dict[str, Any]


class TextPart(msgspec.Struct, frozen=True, tag="text"):
    text: str
    raw: ProviderBlock | None = None


class ToolCall(msgspec.Struct, frozen=True, tag="tool_call"):
    """A client tool call the caller must answer with a :class:`ToolResult` of the same id.

    Providers that send no id (some models and local servers) get a deterministic
    synthetic one, so recorded sessions replay identically.
    """

    id: str
    name: str
    arguments: dict[str, Any]
    raw: ProviderBlock | None = None


AssistantPart = TextPart | ToolCall | ProviderBlock


class UserMessage(msgspec.Struct, frozen=True, tag="user"):
    text: str


class AssistantMessage(msgspec.Struct, frozen=True, tag="assistant"):
    """One model turn, parts in the order the provider produced them.

    Order matters: a provider's API may require its server tool blocks and tool calls to be
    resent in their original sequence.
    """

    parts: tuple[AssistantPart, ...] = ()

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCall))


class ToolResult(msgspec.Struct, frozen=True):
    """The answer to one :class:`ToolCall`.

    ``name`` is optional: a provider that pairs a result with its call by function name
    has its adapter find it from the matching call earlier in the history.
    """

    call_id: str
    content: str
    is_error: bool = False
    name: str | None = None


class ToolResultsMessage(msgspec.Struct, frozen=True, tag="tool_results"):
    """Results for the calls of the preceding assistant turn.

    Adapters merge consecutive user-side messages (tool results, then user text) into
    one user turn, tool results first, as the strictest of the providers' APIs requires.
    """

    results: tuple[ToolResult, ...]


Message = UserMessage | AssistantMessage | ToolResultsMessage


class Tool(msgspec.Struct, frozen=True):
    """A client tool; ``input_schema`` is JSON Schema and is sent unchanged (enums kept)."""

    name: str
    description: str
    input_schema: dict[str, Any]


class ToolChoice(msgspec.Struct, frozen=True):
    """``auto`` (model decides), ``any`` (must call some tool), ``tool`` (must call ``name``),
    ``none`` (must not call tools)."""

    mode: Literal["auto", "any", "tool", "none"] = "auto"
    name: str | None = None

    def __post_init__(self) -> None:
        if (self.mode == "tool") != (self.name is not None):
            raise ValueError("ToolChoice: name is required with mode 'tool' and only then")

    @classmethod
    def auto(cls) -> ToolChoice:
        return cls("auto")

    @classmethod
    def any(cls) -> ToolChoice:
        return cls("any")

    @classmethod
    def tool(cls, name: str) -> ToolChoice:
        return cls("tool", name)

    @classmethod
    def none(cls) -> ToolChoice:
        return cls("none")


class WebSearch(msgspec.Struct, frozen=True, tag="web_search"):
    """The provider's own web search, where its spec's ``search`` says it has one.

    ``max_uses`` and the domain lists are honoured where the provider supports them;
    the others ignore them.
    """

    max_uses: int | None = None
    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()


ServerTool = WebSearch


class Request(msgspec.Struct, frozen=True):
    """One model call. ``model=None`` means the provider's configured model."""

    messages: tuple[Message, ...]
    system: str = ""
    tools: tuple[Tool, ...] = ()
    tool_choice: ToolChoice = ToolChoice()
    max_tokens: int = 4096
    model: str | None = None
    temperature: float | None = None
    server_tools: tuple[ServerTool, ...] = ()
    parallel_tool_calls: bool = True

    def __post_init__(self) -> None:
        # Caught here rather than as a paid 400 from the provider.
        choice = self.tool_choice
        if choice.mode == "tool" and choice.name not in {t.name for t in self.tools}:
            raise ValueError(f"tool_choice names {choice.name!r}, which is not among the tools")
        if self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")


class StopReason(enum.StrEnum):
    END_TURN = "end_turn"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    PAUSE_TURN = "pause_turn"
    """The model paused a long server-tool turn; send the turn back to let it continue."""
    REFUSAL = "refusal"
    OTHER = "other"


class Usage(msgspec.Struct, frozen=True):
    """Billed usage of one call, normalised across providers.

    ``input_tokens`` excludes cached tokens (an adapter whose provider counts the cached
    part inside its prompt count moves it to ``cache_read_tokens``).
    ``output_tokens`` excludes ``thoughts_tokens`` (a provider that reports thoughts
    apart bills them as output; one that counts thinking inside its output leaves
    ``thoughts_tokens`` at 0). ``cache_write_1h_tokens`` is the part of
    ``cache_write_tokens`` written with the 1-hour TTL, which costs more.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    thoughts_tokens: int = 0
    web_search_requests: int = 0
    web_fetch_requests: int = 0
    grounded_prompts: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{f: getattr(self, f) + getattr(other, f) for f in self.__struct_fields__})


class Citation(msgspec.Struct, frozen=True):
    """A web page the provider's own search put in front of the model.

    Each search result entry or cited passage (``text`` is the passage quoted from the
    page), or each grounding chunk of a grounded answer (``url`` may be the search
    engine's redirect to the page, ``title`` its domain; ``text`` the part of the
    answer grounded in it): each adapter says which. The content comes from the web:
    untrusted, for showing and matching, never for obeying.
    """

    url: str
    title: str = ""
    text: str = ""


class Response(msgspec.Struct, frozen=True):
    """What one ``Provider.complete`` returned.

    ``message`` is the assistant turn to append to the history as is. ``model`` is the
    model the provider says answered (may be a dated snapshot of the requested one).
    ``citations`` are the web sources its server-side search or grounding used.
    """

    message: AssistantMessage
    stop_reason: StopReason
    raw_stop_reason: str
    usage: Usage
    provider: ProviderName
    model: str
    request_id: str | None = None
    duration_ms: int = 0
    citations: tuple[Citation, ...] = ()

    @property
    def text(self) -> str:
        return self.message.text

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return self.message.tool_calls
