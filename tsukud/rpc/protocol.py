"""Frames and request validation (schema/rpc.md).

A frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON. Requests are
decoded straight into msgspec Structs, so a wrong type anywhere is one precise error
("Expected `int`, got `str` - at `$.params.limit`") rather than a crash deeper in.
"""

from __future__ import annotations

import struct
from typing import Any

import msgspec

from tsukud.errors import FrameTooLarge, ProtocolError, TsukuError

MAX_FRAME = 1 << 20
HEADER = struct.Struct(">I")

RequestId = int | str


class Request(msgspec.Struct, forbid_unknown_fields=True):
    id: RequestId
    method: str
    params: dict[str, Any] = {}


_request_decoder = msgspec.json.Decoder(Request)
_any_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


def encode_frame(obj: Any) -> bytes:
    body = _encoder.encode(obj)
    if len(body) > MAX_FRAME:
        raise FrameTooLarge(f"response of {len(body)} bytes exceeds the {MAX_FRAME}-byte frame cap")
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
    except msgspec.DecodeError:
        return None
    if isinstance(obj, dict):
        rid = obj.get("id")
        if isinstance(rid, int | str) and not isinstance(rid, bool):
            return rid
    return None


class BadRequest(Exception):
    def __init__(self, error: TsukuError, request_id: RequestId | None) -> None:
        super().__init__(error.message)
        self.error = error
        self.request_id = request_id


def decode_request(body: bytes) -> Request:
    try:
        req = _request_decoder.decode(body)
    except msgspec.ValidationError as e:
        raise BadRequest(ProtocolError(f"invalid request: {e}"), _salvage_id(body)) from None
    except msgspec.DecodeError as e:
        raise BadRequest(ProtocolError(f"frame is not valid JSON: {e}"), None) from None
    if isinstance(req.id, str) and len(req.id) > 128:
        raise BadRequest(ProtocolError("request id longer than 128 characters"), None)
    return req


def result_frame(rid: RequestId | None, result: Any) -> dict[str, Any]:
    return {"id": rid, "result": result}


def progress_frame(rid: RequestId | None, progress: Any) -> dict[str, Any]:
    return {"id": rid, "progress": progress}


def error_frame(rid: RequestId | None, error: TsukuError) -> dict[str, Any]:
    return {"id": rid, "error": error.to_wire()}
