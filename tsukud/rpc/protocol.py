"""Frames and request validation (schema/rpc.md).

A frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON. Requests are
decoded straight into msgspec Structs, so a wrong type anywhere is one precise error
("Expected `int`, got `str` - at `$.params.limit`") rather than a crash deeper in.

Any local process of the same user can send any bytes, so every way a body can fail to
be a request (not UTF-8, a lone surrogate, nesting deep enough to exhaust the C stack,
an integer too large for any field) ends here as a ``BadRequest``, never as an exception
escaping into the server. Requests are also held to ``MAX_DEPTH``: the values a handler
stores (event payloads, settings) are read back by SQLite's JSON functions and by
clients' recursive JSON parsers, which must not be handed something they choke on.

A frame must mean one thing to every reader. JSON leaves duplicate keys to the parser
(msgspec, like most, keeps the last), so ``{"method":"ping","method":"daemon.stop"}``
would read as a ping to a log, a proxy or a person reading the first key, and stop the
daemon. A key repeated in any object, at any depth, is a ``BadRequest``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import msgspec

from tsukud.errors import FrameTooLarge, ProtocolError, TsukuError

MAX_FRAME = 1 << 20
HEADER = struct.Struct(">I")
MAX_DEPTH = 64  # levels of arrays and objects in a request, its own object included
MAX_ID_LENGTH = 128

RequestId = int | str


_NO_PARAMS = msgspec.Raw(b"{}")
_OPEN_BRACE = ord("{")


class Request(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    id: RequestId
    method: str
    # Kept as the frame's bytes (an object, checked below) and decoded once, straight
    # into the method's params Struct (``params_decoder``): no dict built per request
    # only to be converted into the Struct and dropped.
    params: msgspec.Raw = _NO_PARAMS
    # The caller's allowlisted environment, applied to this request only
    # (tsukud/caller_env.py), and the home it means to use: a daemon of another home
    # refuses the request.
    env: dict[str, str] = {}
    home: str | None = None
    # ``omit_defaults``: re-encoded, it holds only the keys surely sent (``decode_call``).


class _CheckedRequest(msgspec.Struct, forbid_unknown_fields=True):
    """The shape a request must have, params an object: decoded only to word the error
    of a frame that ``Request`` (whose params are raw) let through or refused."""

    id: RequestId
    method: str
    params: dict[str, Any] = {}
    env: dict[str, str] = {}
    home: str | None = None


_request_decoder = msgspec.json.Decoder(Request)
_checked_decoder = msgspec.json.Decoder(_CheckedRequest)
_any_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


class ParamsReader:
    """One method's params: their decoder, and whether a decoded value re-encodes to
    only keys that were sent (``countable``), so ``decode_call`` may check a frame's
    keys from it instead of decoding the frame a second time."""

    def __init__(self, params: type[msgspec.Struct]) -> None:
        self.decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(params)
        self.countable = _countable(msgspec.inspect.type_info(params), set())


def _countable(t: msgspec.inspect.Type, seen: set[type]) -> bool:
    """Whether every value of type ``t``, decoded from JSON without a backslash and
    re-encoded, holds at most the keys and colons it was decoded from: objects are
    Structs with ``omit_defaults`` (a member left at its default may not have been sent,
    and is not written back) or dicts with string keys (a repeated key is held once),
    and every string re-encodes to its own bytes. Types that could write back more
    (``Raw`` echoes its bytes, repeats and all; a datetime or UUID may be re-spelled)
    are not: their frames take the generic check."""
    inspect = msgspec.inspect
    if isinstance(t, inspect.StructType):
        if t.cls in seen:
            return True
        seen.add(t.cls)
        return bool(t.cls.__struct_config__.omit_defaults) and all(
            _countable(f.type, seen) for f in t.fields
        )
    if isinstance(t, inspect.DictType):
        return isinstance(t.key_type, inspect.StrType) and _countable(t.value_type, seen)
    if isinstance(t, inspect.ListType | inspect.VarTupleType | inspect.SetType):
        return _countable(t.item_type, seen)
    if isinstance(t, inspect.TupleType):
        return all(_countable(item, seen) for item in t.item_types)
    if isinstance(t, inspect.UnionType):
        return all(_countable(member, seen) for member in t.types)
    return isinstance(t, _PLAIN)


_PLAIN = (
    msgspec.inspect.AnyType,
    msgspec.inspect.NoneType,
    msgspec.inspect.BoolType,
    msgspec.inspect.IntType,
    msgspec.inspect.FloatType,
    msgspec.inspect.StrType,
    msgspec.inspect.LiteralType,
    msgspec.inspect.EnumType,
)


def encode_frame(obj: Any) -> bytes:
    body = _encoder.encode(obj)
    if len(body) > MAX_FRAME:
        raise FrameTooLarge(
            f"response of {len(body)} bytes exceeds the {MAX_FRAME}-byte frame cap",
            hint="The answer is too large for one frame; ask for less at a time.",
        )
    return HEADER.pack(len(body)) + body


def frame_length(header: bytes) -> int:
    (n,) = HEADER.unpack(header)
    if n > MAX_FRAME:
        raise FrameTooLarge(
            f"frame of {n} bytes exceeds the {MAX_FRAME}-byte cap",
            hint="Requests are small; a length this large means the stream is not tsuku RPC.",
        )
    return int(n)


def _salvage_id(body: bytes) -> RequestId | None:
    """Best effort: answer a malformed request under its own id when it has one."""
    try:
        obj = _any_decoder.decode(body)
    except (msgspec.DecodeError, ValueError, RecursionError):
        return None
    if isinstance(obj, dict):
        rid = obj.get("id")
        if _valid_id(rid):
            return rid
    return None


def _valid_id(rid: object) -> bool:
    if isinstance(rid, bool):
        return False
    if isinstance(rid, str):
        return len(rid) <= MAX_ID_LENGTH
    return isinstance(rid, int)


def _outside_strings(body: bytes) -> bytes:
    """The bytes of ``body`` (valid JSON) that are not inside a string, with bytes
    methods only (C speed). Valid JSON has backslashes only in strings, as pairs: drop
    escaped backslashes, then escaped quotes, and every quote left opens or closes a
    string."""
    unescaped = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    return b"".join(unescaped.split(b'"')[0::2])


def _repeats_a_key(body: bytes, decoded: object) -> bool:
    """Whether an object in ``body`` (valid JSON, ``decoded`` its generic value) names
    a key twice. Every key written is followed by a colon outside strings, and the
    decoded value holds one key per distinct name: re-encoded, its colons outside
    strings count the keys held, so the two counts differ exactly when a name repeats.
    Without a backslash in ``body`` every string re-encodes to the same bytes, so the raw
    counts of colons compare alike and no string is cut out (C-speed byte counts only:
    this runs for every request)."""
    colons = body.count(b":")
    if colons == 0:
        return False
    held = _encoder.encode(decoded)
    if b"\\" not in body:
        return held.count(b":") != colons
    return _outside_strings(held).count(b":") != _outside_strings(body).count(b":")


def _nests_deeper_than(body: bytes, limit: int) -> bool:
    """Whether the arrays and objects of ``body`` (valid JSON) nest more than ``limit``
    levels deep, at C speed. Few brackets settle it by their count. Otherwise the body is
    formatted one value a line, each indented by a space per array or object holding it
    (JSON strings hold no raw newline, so every line is the formatter's): with no line
    indented ``limit`` spaces, no non-empty container is ``limit`` deep and no empty one
    deeper. Only a body that reaches that deep has its brackets counted exactly: escapes
    and then strings dropped, every bracket made square and everything else deleted; then
    each round removes every innermost pair, so ``limit`` rounds empty any body within
    the limit. (The count is taken of small bodies only: a large one would pay two scans
    of itself for an answer that is nearly always "count again".)"""
    if len(body) <= _COUNT_BRACKETS_BELOW and body.count(b"[") + body.count(b"{") <= limit:
        return False
    try:
        formatted = msgspec.json.format(body, indent=1)
    except (msgspec.DecodeError, RecursionError):
        return True
    if b"\n" + b" " * limit not in formatted:
        return False
    brackets = _outside_strings(body).translate(_SQUARE, _NOT_BRACKETS)
    for _ in range(limit):
        if not brackets:
            return False
        brackets = brackets.replace(b"[]", b"")
    return bool(brackets)


_COUNT_BRACKETS_BELOW = 4096
_SQUARE = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class BadRequest(Exception):
    def __init__(self, error: TsukuError, request_id: RequestId | None) -> None:
        super().__init__(error.message)
        self.error = error
        self.request_id = request_id


def decode_request(body: bytes) -> Request:
    """The request in ``body``, or ``BadRequest`` for anything else whatsoever."""
    try:
        # The whole body, generically, first: it must be JSON and UTF-8 throughout
        # (``Request`` keeps params as raw bytes, unchecked), and the repeated-key check
        # counts the keys this holds.
        decoded = _any_decoder.decode(body)
    except msgspec.DecodeError as e:
        # msgspec 0.23 reports bad UTF-8 as a DecodeError (earlier ones raised
        # UnicodeDecodeError, below): say which it was either way.
        what = "UTF-8" if "UTF-8" in str(e) else "JSON"
        raise BadRequest(ProtocolError(f"frame is not valid {what}: {e}"), None) from None
    except UnicodeDecodeError as e:
        raise BadRequest(ProtocolError(f"frame is not valid UTF-8: {e.reason}"), None) from None
    except RecursionError:
        raise BadRequest(_nested_too_deeply(), None) from None
    try:
        req = _request_decoder.decode(body)
        if memoryview(req.params)[0] != _OPEN_BRACE:  # null, a number, a list: say which
            _checked_decoder.decode(body)
    except msgspec.ValidationError as e:
        raise BadRequest(ProtocolError(f"invalid request: {e}"), _salvage_id(body)) from None
    if isinstance(req.id, str) and len(req.id) > MAX_ID_LENGTH:
        raise BadRequest(ProtocolError(f"request id longer than {MAX_ID_LENGTH} characters"), None)
    if _nests_deeper_than(body, MAX_DEPTH):
        raise BadRequest(_nested_too_deeply(), req.id)
    if _repeats_a_key(body, decoded):
        raise BadRequest(
            ProtocolError(
                "request names the same key twice in one object",
                hint="Send each key once: a repeated key would mean one thing to one "
                "reader and another to the next.",
            ),
            None,
        )
    return req


# From this many bytes a frame is decoded once (``decode_call``); below it the generic
# decode costs less than the count's fixed steps, and most frames are small.
DECODE_ONCE_FROM = 4096


def decode_call(
    body: bytes, reader_for: Callable[[str], ParamsReader | None]
) -> tuple[Request, Any]:
    """The request in ``body`` and its params decoded by its method's reader
    (``reader_for``; None: no such method): the params Struct, the
    ``msgspec.ValidationError`` that refused them (the method answers
    ``invalid_params``), or None for a method that does not exist. ``BadRequest``
    exactly as ``decode_request`` refuses the frame, and before anything about its
    params.

    A large frame (an ``events.append`` of a thousand events) is decoded once: the
    request with its params as raw bytes, then the params straight into their Struct.
    Its keys are then checked by count: every key the decoded values hold was sent (in
    the same object), so they hold at most as many keys as the frame writes, and as
    many only when no object names a key twice. Without a backslash in the frame every
    string re-encodes to the same bytes, so the colons of the re-encoded values and of
    the frame compare alike (keys and strings both). Any frame where they differ (a
    repeat, a default sent explicitly), or that is refused on the way, takes
    ``decode_request``'s generic decode of the whole frame, so every frame is held to
    the same checks and refused with the same error."""
    reader = None
    if len(body) >= DECODE_ONCE_FROM and b"\\" not in body:
        req = _envelope(body)
        if req is not None:
            reader = reader_for(req.method)
            if reader is not None and reader.countable:
                try:
                    params = reader.decoder.decode(req.params)
                except msgspec.ValidationError:
                    pass  # refused below, after the frame's own checks
                except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
                    pass  # not a frame: decode_request says why
                else:
                    if _held_colons(req, params) == body.count(b":"):
                        return req, params
    req = decode_request(body)
    if reader is None:
        reader = reader_for(req.method)
        if reader is None:
            return req, None
    try:
        return req, reader.decoder.decode(req.params)
    except msgspec.ValidationError as e:
        return req, e


def _envelope(body: bytes) -> Request | None:
    """``body``'s request when its envelope passes every check that does not need the
    params decoded; None when ``decode_request`` must say what is wrong with it."""
    try:
        req = _request_decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
        return None
    if memoryview(req.params)[0] != _OPEN_BRACE:
        return None
    if isinstance(req.id, str) and len(req.id) > MAX_ID_LENGTH:
        return None
    if _nests_deeper_than(body, MAX_DEPTH):
        return None
    return req


def _held_colons(req: Request, params: Any) -> int:
    """The colons of ``req`` and its decoded ``params`` re-encoded. The envelope holds
    its params as the frame's raw bytes: it is re-encoded without them (its ``params``
    key counted by hand), and the params are counted as decoded."""
    envelope = msgspec.structs.replace(req, params=_NO_PARAMS)  # omitted: the default
    sent = req.params is not _NO_PARAMS
    return _encoder.encode(envelope).count(b":") + sent + _encoder.encode(params).count(b":")


def _nested_too_deeply() -> ProtocolError:
    return ProtocolError(
        f"request nests arrays and objects more than {MAX_DEPTH} levels deep",
        hint=f"No tsuku request needs more than {MAX_DEPTH} levels; flatten the value.",
    )


def result_frame(rid: RequestId | None, result: Any) -> dict[str, Any]:
    return {"id": rid, "result": result}


def progress_frame(rid: RequestId | None, progress: Any) -> dict[str, Any]:
    return {"id": rid, "progress": progress}


def error_frame(rid: RequestId | None, error: TsukuError) -> dict[str, Any]:
    return {"id": rid, "error": error.to_wire()}
