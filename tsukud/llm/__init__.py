"""LLM providers behind one neutral interface (docs/architecture.md, "Features as services").

Only the light modules are imported here. The adapters (each provider spec's
``adapter``, ``llm/providers.py``) import their SDKs, which take long to load, so the
daemon imports them on first use.
"""

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
    ProviderTransientError,
    ReplayMiss,
    UnsupportedRequest,
)
from tsukud.llm.types import (
    AssistantMessage,
    Citation,
    Message,
    ProviderBlock,
    Request,
    Response,
    StopReason,
    TextPart,
    Tool,
    ToolCall,
    ToolChoice,
    ToolResult,
    ToolResultsMessage,
    Usage,
    UserMessage,
    WebSearch,
)

__all__ = [
    "AssistantMessage",
    "Citation",
    "MalformedToolArguments",
    "Message",
    "Provider",
    "ProviderAuthError",
    "ProviderBlock",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderOverloaded",
    "ProviderRateLimited",
    "ProviderRequestError",
    "ProviderServerError",
    "ProviderTimeout",
    "ProviderTransientError",
    "ReplayMiss",
    "Request",
    "Response",
    "StopReason",
    "TextPart",
    "Tool",
    "ToolCall",
    "ToolChoice",
    "ToolResult",
    "ToolResultsMessage",
    "UnsupportedRequest",
    "Usage",
    "UserMessage",
    "WebSearch",
]
