"""What the real LLM APIs refuse, as plain functions over a request's JSON body.

Each ``*_violations`` function returns the reasons the real service would answer 400
(empty when it would accept the request). The fake servers call them on every request
and fail the test when one is found, so a test cannot pass on a request the real API
would reject. The rules follow the providers' documentation and error messages:

- Anthropic Messages API: the body must fit the SDK's own request types
  (``anthropic.types.MessageCreateParams``; unknown fields are refused), turns alternate
  user/assistant starting with user, every ``tool_use`` is answered by a ``tool_result``
  in the very next user turn (results first), no orphan results, calls name declared
  tools, and ``tool_choice`` makes sense (a named tool exists; a forced tool is refused
  while thinking is on).
  https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use
- Gemini ``generateContent``: contents, tools and config must fit google-genai's models
  (proto3 JSON: camelCase or snake_case), roles are ``user``/``model``, a function-call
  turn follows a user turn and is answered by one user turn with as many function
  responses (names and ids matching), ``toolConfig`` is coherent, and on Gemini 3 models
  the first function call of every model step in the current turn carries a valid
  ``thoughtSignature``.
  https://ai.google.dev/gemini-api/docs/function-calling ·
  https://ai.google.dev/gemini-api/docs/thought-signatures
- OpenAI-compatible ``chat/completions`` (OpenAI's own rules, the strictest dialect):
  known fields only, every assistant ``tool_calls`` answered by ``tool`` messages right
  after it, no orphan ``tool`` messages, ``tool_choice`` naming a declared function.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import typing_extensions

# ------------------------------------------------------------ SDK request types


@functools.cache
def _fields(typed_dict: type) -> tuple[dict[str, Any], frozenset[str], bool]:
    """The keys of an SDK TypedDict, which of them are required, and whether it
    allows extra keys (the SDK marks a few, such as JSON schemas, that way)."""
    hints = typing.get_type_hints(typed_dict, include_extras=True)
    total = getattr(typed_dict, "__total__", True)
    fields: dict[str, Any] = {}
    required: set[str] = set()
    for name, hint in hints.items():
        origin = typing.get_origin(hint)
        if origin is typing.Required:
            required.add(name)
            hint = typing.get_args(hint)[0]
        elif origin is typing.NotRequired:
            hint = typing.get_args(hint)[0]
        elif total:
            required.add(name)
        fields[name] = hint
    config = getattr(typed_dict, "__pydantic_config__", None) or {}
    return fields, frozenset(required), config.get("extra") == "allow"


def _is_typed_dict(tp: Any) -> bool:
    # typing_extensions' own TypedDicts (the SDKs') are not typing's on Python 3.11.
    return isinstance(tp, type) and typing_extensions.is_typeddict(tp)


def schema_errors(value: Any, tp: Any, path: str) -> list[str]:
    """Where ``value`` does not fit the SDK type ``tp``, in the API's words."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any or tp is object:
        return []
    if origin is typing.Annotated:
        return schema_errors(value, args[0], path)
    if tp is type(None):
        return [] if value is None else [f"{path}: Input should be null"]
    if origin is typing.Literal:
        return [] if value in args else [f"{path}: Input should be one of {list(args)!r}"]
    if origin in (typing.Union, types.UnionType):
        branches = [schema_errors(value, arg, path) for arg in args]
        if any(not errors for errors in branches):
            return []
        return min(branches, key=len)
    if _is_typed_dict(tp):
        return _typed_dict_errors(value, tp, path)
    if tp is str:
        return [] if isinstance(value, str) else [f"{path}: Input should be a valid string"]
    if tp is bool:
        return [] if isinstance(value, bool) else [f"{path}: Input should be a valid boolean"]
    if tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return [] if ok else [f"{path}: Input should be a valid integer"]
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return [] if ok else [f"{path}: Input should be a valid number"]
    if origin in (dict, Mapping) or tp is dict:
        if not isinstance(value, dict):
            return [f"{path}: Input should be a valid dictionary"]
        item = args[1] if len(args) == 2 else Any
        return [e for k, v in value.items() for e in schema_errors(v, item, f"{path}.{k}")]
    if origin in (list, Iterable, Sequence) or _is_sequence_protocol(tp):
        if not isinstance(value, list):
            return [f"{path}: Input should be a valid list"]
        item = args[0] if args else Any
        return [e for i, v in enumerate(value) for e in schema_errors(v, item, f"{path}.{i}")]
    return []  # a type the rules do not model: accepted, as the SDK would send it


def _is_sequence_protocol(tp: Any) -> bool:
    """The SDK's ``SequenceNotStr[...]``, a Protocol standing for a list."""
    return getattr(typing.get_origin(tp), "__name__", "") == "SequenceNotStr"


def _typed_dict_errors(value: Any, tp: type, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: Input should be a valid dictionary"]
    fields, required, extra_ok = _fields(tp)
    errors = [f"{path}.{k}: Field required" for k in sorted(required - value.keys())]
    for key, item in value.items():
        if key in fields:
            errors += schema_errors(item, fields[key], f"{path}.{key}")
        elif not extra_ok:
            errors.append(f"{path}.{key}: Extra inputs are not permitted")
    return errors


# ------------------------------------------------------------------- Anthropic

_CLAUDE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_CLAUDE_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")


def anthropic_violations(body: Any) -> list[str]:
    """Why ``POST /v1/messages`` would answer 400 ``invalid_request_error``."""
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    errors = schema_errors(body, MessageCreateParamsNonStreaming, "body")
    if errors:
        return errors
    if body["max_tokens"] < 1:
        errors.append("max_tokens: Input should be greater than or equal to 1")
    tools = body.get("tools") or []
    declared = [t["name"] for t in tools if isinstance(t, dict) and "name" in t]
    client_tools = {t["name"] for t in tools if "input_schema" in t}
    if len(set(declared)) != len(declared):
        errors.append("tools: Tool names must be unique.")
    errors += [
        f"tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
        for i, t in enumerate(tools)
        if "input_schema" in t and not _CLAUDE_TOOL_NAME.match(t["name"])
    ]
    errors += _claude_tool_choice(body, set(declared))
    errors += _claude_turns(body["messages"], client_tools, bool(tools))
    return errors


def _claude_tool_choice(body: dict[str, Any], declared: set[str]) -> list[str]:
    choice = body.get("tool_choice")
    if choice is None:
        return []
    if not body.get("tools"):
        return ["tool_choice: tool_choice may only be specified while providing tools."]
    errors = []
    if choice["type"] == "tool" and choice["name"] not in declared:
        errors.append(f"tool_choice.name: Tool '{choice['name']}' not found in provided tools")
    thinking = body.get("thinking") or {}
    if choice["type"] in ("any", "tool") and thinking.get("type") in ("enabled", "adaptive"):
        errors.append("Thinking may not be enabled when tool_choice forces tool use.")
    return errors


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _claude_turns(
    messages: list[dict[str, Any]], client_tools: set[str], has_tools: bool
) -> list[str]:
    errors: list[str] = []
    turns = [m for m in messages if m["role"] != "system"]
    if not turns:
        return ["messages: at least one message is required"]
    if turns[0]["role"] != "user":
        errors.append('messages: first message must use the "user" role')
    previous_calls: list[str] = []
    for index, turn in enumerate(turns):
        blocks = _blocks(turn)
        where = f"messages.{index}"
        if index and turn["role"] == turns[index - 1]["role"]:
            errors.append(f'{where}: roles must alternate between "user" and "assistant"')
        if turn["role"] == "assistant":
            if previous_calls:
                errors.append(_unanswered(index - 1, previous_calls))
            previous_calls = []
            for block in blocks:
                if block.get("type") == "text" and not block.get("text"):
                    errors.append(f"{where}: text content blocks must be non-empty")
                if block.get("type") != "tool_use":
                    continue
                if not has_tools:
                    errors.append(
                        "Requests which include `tool_use` or `tool_result` blocks must "
                        "define tools."
                    )
                elif block["name"] not in client_tools:
                    errors.append(f"{where}: tool_use names unknown tool '{block['name']}'")
                if not _CLAUDE_ID.match(block["id"]):
                    errors.append(f"{where}: tool_use.id: String should match '^[a-zA-Z0-9_-]+$'")
                previous_calls.append(block["id"])
            continue
        answered = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        first_other = next(
            (i for i, b in enumerate(blocks) if b.get("type") != "tool_result"), len(blocks)
        )
        if any(b.get("type") == "tool_result" for b in blocks[first_other:]):
            errors.append(
                f"{where}: tool_result blocks must come first in the content, before any text"
            )
        orphans = [i for i in answered if i not in previous_calls]
        if orphans:
            errors.append(
                f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: "
                f"{orphans[0]}. Each `tool_result` block must have a corresponding "
                "`tool_use` block in the previous message."
            )
        missing = [i for i in previous_calls if i not in answered]
        if missing:
            errors.append(_unanswered(index - 1, missing))
        previous_calls = []
    return errors


def _unanswered(index: int, ids: list[str]) -> str:
    return (
        f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
        f"immediately after: {', '.join(ids)}. Each `tool_use` block must have a "
        "corresponding `tool_result` block in the next message."
    )


# ---------------------------------------------------------------------- Gemini

DUMMY_SIGNATURES = frozenset(
    {"skip_thought_signature_validator", "context_engineering_is_the_way_to_go"}
)
"""Google's documented stand-ins for history Gemini did not produce."""

_GEMINI_TOP = frozenset(
    {
        "model", "contents", "tools", "toolConfig", "tool_config", "safetySettings",
        "safety_settings", "systemInstruction", "system_instruction", "generationConfig",
        "generation_config", "cachedContent", "cached_content", "labels", "serviceTier",
    }
)  # fmt: skip
_MODES = frozenset({"MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"})


def enforces_thought_signatures(model: str) -> bool:
    """Gemini 3 and later validate signatures; 2.x and Gemini 3 Pro Image do not."""
    match = re.match(r"^(?:models/)?gemini-(\d+)", model)
    return match is not None and int(match.group(1)) >= 3 and "-image" not in model


def signature_bytes(value: str) -> bytes | None:
    """A ``thoughtSignature`` as the API reads it: proto3 ``bytes``, base64 of either
    alphabet."""
    padded = (value + "=" * (-len(value) % 4)).encode()
    try:
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        pass
    try:
        return base64.b64decode(padded, altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        return None


def _get(mapping: dict[str, Any], camel: str) -> Any:
    snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel)
    return mapping.get(camel, mapping.get(snake))


def gemini_violations(model: str, body: Any, issued_signatures: Iterable[bytes] = ()) -> list[str]:
    """Why ``models/{model}:generateContent`` would answer 400 ``INVALID_ARGUMENT``.

    ``issued_signatures`` are the signatures this fake put in its answers (decoded);
    any other value in a place the API validates is "corrupted".
    """
    if not isinstance(body, dict):
        return ["Invalid JSON payload received. Expected an object."]
    errors = [
        f'Invalid JSON payload received. Unknown name "{key}": Cannot find field.'
        for key in body
        if key not in _GEMINI_TOP
    ]
    errors += _gemini_schema(body)
    if errors:
        return errors
    contents = body.get("contents") or []
    if not contents:
        return ["* GenerateContentRequest.contents: contents is not specified"]
    errors += _gemini_tool_config(model, body)
    errors += _gemini_turns(contents)
    if enforces_thought_signatures(model):
        errors += _gemini_signatures(contents, frozenset(issued_signatures))
    return errors


def _gemini_schema(body: dict[str, Any]) -> list[str]:
    import pydantic
    from google.genai import types as gt

    checks: list[tuple[str, Any, Any]] = [
        (f"contents[{i}]", gt.Content, c) for i, c in enumerate(body.get("contents") or [])
    ]
    checks += [(f"tools[{i}]", gt.Tool, t) for i, t in enumerate(body.get("tools") or [])]
    for camel, model in (
        ("toolConfig", gt.ToolConfig),
        ("systemInstruction", gt.Content),
        ("generationConfig", gt.GenerationConfig),
    ):
        if _get(body, camel) is not None:
            checks.append((camel, model, _get(body, camel)))
    errors = []
    for where, model, value in checks:
        try:
            model.model_validate(value)
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            location = ".".join(str(p) for p in first["loc"])
            errors.append(f"Invalid value at '{where}.{location}': {first['msg']}")
    return errors


def _declared_functions(body: dict[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        for declaration in _get(tool, "functionDeclarations") or []:
            names.append(declaration.get("name"))
    return names


def _gemini_tool_config(model: str, body: dict[str, Any]) -> list[str]:
    tools = body.get("tools") or []
    functions = _declared_functions(body)
    search = any(_get(t, "googleSearch") is not None for t in tools)
    config = _get(body, "toolConfig") or {}
    calling = _get(config, "functionCallingConfig")
    errors = []
    if search and functions:
        if not enforces_thought_signatures(model):  # the Gemini 2.x family
            errors.append("Tool use with function calling is unsupported by the model.")
        elif not _get(config, "includeServerSideToolInvocations"):
            errors.append(
                "Please enable tool_config.include_server_side_tool_invocations to use "
                "Built-in tools with Function calling."
            )
    if calling is None:
        return errors
    if not functions:
        errors.append("Function calling config is set without function_declarations.")
    mode = calling.get("mode", "AUTO")
    if mode not in _MODES:
        errors.append(f"Invalid value at 'tool_config.function_calling_config.mode': {mode!r}")
    allowed = _get(calling, "allowedFunctionNames")
    if allowed:
        if mode not in ("ANY", "VALIDATED"):
            errors.append(
                "allowed_function_names may only be set when function calling mode is ANY "
                "or VALIDATED."
            )
        errors += [
            f"allowed_function_names: function {name!r} is not declared"
            for name in allowed
            if name not in functions
        ]
    return errors


def _parts(content: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in content.get("parts") or [] if isinstance(p, dict)]


def _calls(content: dict[str, Any]) -> list[dict[str, Any]]:
    return [_get(p, "functionCall") for p in _parts(content) if _get(p, "functionCall")]


def _responses(content: dict[str, Any]) -> list[dict[str, Any]]:
    return [_get(p, "functionResponse") for p in _parts(content) if _get(p, "functionResponse")]


def _gemini_turns(contents: list[dict[str, Any]]) -> list[str]:
    errors = []
    for index, content in enumerate(contents):
        role = content.get("role", "user")
        if role not in ("user", "model"):
            errors.append(
                f"Please use a valid role: user, model. (contents[{index}].role={role!r})"
            )
            continue
        before = contents[index - 1] if index else None
        calls, responses = _calls(content), _responses(content)
        if role == "model" and calls and (before is None or before.get("role", "user") != "user"):
            errors.append(
                "Please ensure that function call turn comes immediately after a user turn "
                "or after a function response turn."
            )
        if responses and (role != "user" or before is None or not _calls(before)):
            errors.append(
                "Please ensure that function response turn comes immediately after a "
                "function call turn."
            )
        if role == "model" and calls and index + 1 < len(contents):
            errors += _answered(index, calls, _responses(contents[index + 1]))
    return errors


def _answered(
    index: int, calls: list[dict[str, Any]], responses: list[dict[str, Any]]
) -> list[str]:
    if len(calls) != len(responses):
        return [
            "Please ensure that the number of function response parts is equal to the "
            f"number of function call parts of the function call turn (contents[{index}]: "
            f"{len(calls)} calls, {len(responses)} responses)."
        ]
    errors = []
    if sorted(str(c.get("name")) for c in calls) != sorted(str(r.get("name")) for r in responses):
        errors.append(
            f"contents[{index + 1}]: function response names do not match the calls of "
            f"contents[{index}]."
        )
    call_ids = {c["id"] for c in calls if c.get("id")}
    response_ids = {r["id"] for r in responses if r.get("id")}
    if call_ids and response_ids != call_ids:
        errors.append(
            f"contents[{index + 1}]: function response ids {sorted(response_ids)} do not "
            f"match the call ids {sorted(call_ids)} of contents[{index}]."
        )
    return errors


def _current_turn_start(contents: list[dict[str, Any]]) -> int:
    """Index after the newest user content with something besides function responses:
    the current turn, the part of the history whose signatures are validated."""
    for index in range(len(contents) - 1, -1, -1):
        content = contents[index]
        if content.get("role", "user") == "user" and any(
            not _get(p, "functionResponse") for p in _parts(content)
        ):
            return index + 1
    return 0


def _gemini_signatures(contents: list[dict[str, Any]], issued: frozenset[bytes]) -> list[str]:
    errors = []
    for index in range(_current_turn_start(contents), len(contents)):
        content = contents[index]
        if content.get("role") != "model":
            continue
        first = next((p for p in _parts(content) if _get(p, "functionCall")), None)
        if first is None:
            continue
        name = _get(first, "functionCall").get("name")
        signature = _get(first, "thoughtSignature")
        if not signature:
            errors.append(
                "Function call is missing a thought_signature in functionCall parts. This is "
                "required for tools to work correctly, and missing thought_signature may lead "
                f"to degraded model performance. Additional data, function call "
                f"`default_api:{name}` , position {index + 1}. Please refer to "
                "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
            )
        elif signature not in DUMMY_SIGNATURES and signature_bytes(signature) not in issued:
            errors.append(
                f"Corrupted thought signature (function call `default_api:{name}`, "
                f"position {index + 1})."
            )
    return errors


# ------------------------------------------------------------ OpenAI-compatible

_OPENAI_TOP = frozenset(
    {
        "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p",
        "n", "stream", "stream_options", "stop", "presence_penalty", "frequency_penalty",
        "logit_bias", "logprobs", "top_logprobs", "user", "seed", "tools", "tool_choice",
        "parallel_tool_calls", "response_format", "reasoning_effort", "metadata", "store",
        "service_tier", "modalities", "prediction", "audio", "verbosity",
    }
)  # fmt: skip
_OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


def openai_violations(body: Any) -> list[str]:
    """Why ``POST /v1/chat/completions`` would answer 400 ``invalid_request_error``."""
    if not isinstance(body, dict):
        return ["We could not parse the JSON body of your request."]
    errors = [f"Unrecognized request argument supplied: {k}" for k in body if k not in _OPENAI_TOP]
    errors += [
        f"Missing required parameter: '{k}'." for k in ("model", "messages") if k not in body
    ]
    if errors:
        return errors
    tools = body.get("tools") or []
    functions = [t.get("function", {}).get("name") for t in tools if t.get("type") == "function"]
    if len(functions) != len(tools):
        errors.append("Invalid value for 'tools': every tool must be {'type': 'function', ...}.")
    for key in ("tool_choice", "parallel_tool_calls"):
        if key in body and not tools:
            errors.append(
                f"Invalid value for '{key}': '{key}' is only allowed when 'tools' are specified."
            )
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        if choice.get("type") != "function" or name not in functions:
            errors.append(f"Invalid value for 'tool_choice': function {name!r} is not declared.")
    elif choice is not None and choice not in ("auto", "none", "required"):
        errors.append(f"Invalid value for 'tool_choice': {choice!r}.")
    errors += _openai_messages(body["messages"])
    return errors


def _openai_messages(messages: Any) -> list[str]:
    if not isinstance(messages, list) or not messages:
        return ["Invalid 'messages': empty array. Expected an array with minimum length 1."]
    errors = []
    waiting: list[str] = []  # tool_call ids the next messages must answer
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in _OPENAI_ROLES:
            errors.append(f"Invalid value for 'messages[{index}].role': {role!r}.")
            continue
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in waiting:
                errors.append(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceeding message with 'tool_calls' (messages[{index}])."
                )
            else:
                waiting.remove(call_id)
            continue
        if waiting:
            errors.append(_openai_unanswered(waiting))
            waiting = []
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if message.get("content") is None and not calls:
                errors.append(f"messages[{index}]: assistant content or tool_calls is required.")
            for call in calls:
                function = call.get("function") or {}
                if call.get("type") != "function" or not isinstance(function.get("arguments"), str):
                    errors.append(f"messages[{index}].tool_calls: invalid tool call {call!r}.")
                waiting.append(call.get("id"))
        elif message.get("content") is None:
            errors.append(f"messages[{index}].content: Field required.")
    if waiting:
        errors.append(_openai_unanswered(waiting))
    return errors


def _openai_unanswered(ids: list[str]) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(map(str, ids))
    )
