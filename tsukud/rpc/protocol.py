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


class Request(msgspec.Struct, forbid_unknown_fields=True):
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


def params_decoder(params: type[msgspec.Struct]) -> msgspec.json.Decoder[Any]:
    """The decoder of one method's params (built once per method, at registration)."""
    return msgspec.json.Decoder(params)


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
    the limit."""
    if body.count(b"[") + body.count(b"{") <= limit:
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
