"""JSON for the client's frames, without importing the ``json`` package.

``json`` imports ``re`` and compiles its patterns at import: about 8 ms of a 12 ms
``python -c pass`` on the machine the benchmarks run on, paid by every ``tsukuctl
status`` from a prompt or a script. The encoding and decoding themselves are done by
``_json``, the C accelerator ``json.dumps`` and ``json.loads`` call: these functions
build its encoder and scanner the way ``json`` does (same arguments, same defaults), so
the text is the same, byte for byte, as ``json.dumps``'s and what is read is what
``json.loads`` reads (``tests/unit/test_wirejson.py`` compares them). Where ``_json`` is
missing (another Python), or a frame is not plain UTF-8 text, ``json`` itself answers.
Errors are ``json``'s own (``TypeError``, ``ValueError``, ``json.JSONDecodeError``),
raised by ``json``, imported only then.

Stdlib only: ``tsukuctl`` and ``tsukud.launch`` read and write every frame with it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time (tsukuctl's start-up)
if TYPE_CHECKING:
    from typing import Any

try:
    import _json
except ImportError:  # pragma: no cover (CPython always has it)
    _json = None  # type: ignore[assignment]

#: What ``json`` skips around a document.
_WHITESPACE = " \t\n\r"


def _not_serializable(o: object) -> Any:
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def dumps(
    obj: Any, *, ensure_ascii: bool = True, separators: tuple[str, str] = (", ", ": ")
) -> str:
    """``json.dumps(obj, ensure_ascii=..., separators=...)``."""
    if _json is None:  # pragma: no cover
        import json

        return json.dumps(obj, ensure_ascii=ensure_ascii, separators=separators)
    item_separator, key_separator = separators
    escape = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    if isinstance(obj, str):  # json.dumps writes a lone string without the encoder
        return escape(obj)
    encode = _json.make_encoder(
        {}, _not_serializable, escape, None, key_separator, item_separator, False, False, True
    )
    return "".join(encode(obj, 0))


class _Context:
    """The attributes ``_json.make_scanner`` reads off a ``json.JSONDecoder``, at its
    defaults (``parse_float``/``parse_int`` being the types themselves is what makes the
    C scanner parse numbers on its own)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    array_hook = None  # read from 3.15 on
    parse_float = float
    parse_int = int
    parse_constant = {
        "NaN": float("nan"),
        "Infinity": float("inf"),
        "-Infinity": float("-inf"),
    }.__getitem__


_scan = None if _json is None else _json.make_scanner(_Context())  # type: ignore[arg-type]


def loads(data: str | bytes) -> Any:
    """``json.loads(data)``."""
    if isinstance(data, bytes):
        # A BOM or UTF-16/32 (json guesses the encoding from the first bytes): its way.
        if not data[:1].isascii() or b"\x00" in data[:4]:
            return _json_loads(data)
        data = data.decode()
    if _scan is None or data[:1] == "\ufeff":  # json's error for a BOM in a str
        return _json_loads(data)
    start = len(data) - len(data.lstrip(_WHITESPACE))
    try:
        obj, end = _scan(data, start)
    except StopIteration:  # no value where one should start
        return _json_loads(data)
    if end != len(data) and data[end:].strip(_WHITESPACE):
        return _json_loads(data)  # more after the document: json's "Extra data"
    return obj


def _json_loads(data: str | bytes) -> Any:
    import json

    return json.loads(data)
