"""Hostile RPC input, shared by the in-process and the real-daemon property tests.

Two families: bodies that are not requests at all (invalid UTF-8, surrogates, nesting
100,000 deep, integers thousands of digits long, arrays of 100,000 items, random bytes)
and requests to every method in the registry whose params are built from the method's
own params Struct, each field well typed, at an extreme of its type, or of a wrong type,
sometimes beside an unknown field. Whatever arrives, the daemon answers each frame with
exactly one final frame that is not ``internal`` and goes on serving.

Bodies are assembled from JSON fragments (bytes), most of them built once: generating
an example must cost far less than serving it, or 100,000 cases would not fit in CI.
The strategies build a *tree* of fragments (nested tuples that share the fragments)
and :func:`join` makes the bytes outside hypothesis: hypothesis keeps every value drawn
for every example it caches (thousands), and a body of up to a megabyte copied at each
level of its assembly made a 100,000-case run grow to gigabytes and stall.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import msgspec
import msgspec.inspect as mi
from hypothesis import strategies as st

from tsukud.rpc.protocol import MAX_DEPTH, MAX_FRAME
from tsukud.rpc.server import Method

HEADER = struct.Struct(">I")
# A body in parts: bytes, or a tuple of parts, concatenated in order by ``join``.
Tree = bytes | tuple["Tree", ...]
Fragment = st.SearchStrategy[Tree]


def join(tree: Tree) -> bytes:
    out = bytearray()
    stack = [tree]
    while stack:
        part = stack.pop()
        if isinstance(part, bytes):
            out += part
        else:
            stack.extend(reversed(part))
    return bytes(out)


def _list(items: list[Tree]) -> Tree:
    parts: list[Tree] = [b"["]
    for i, x in enumerate(items):
        parts += [b",", x] if i else [x]
    return (*parts, b"]")


def frame(body: bytes) -> bytes:
    return HEADER.pack(len(body)) + body


def encode(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode()


def nested(depth: int, closed: bool = True) -> bytes:
    """Arrays and objects alternating ``depth`` levels deep around a 0."""
    opening = b"".join(b"[" if i % 2 else b'{"k":' for i in range(depth))
    if not closed:
        return opening
    return opening + b"0" + b"".join(b"]" if i % 2 else b"}" for i in reversed(range(depth)))


def digits(n: int, sign: bytes = b"") -> bytes:
    return sign + b"9" * n


def array_of(n: int, item: bytes = b"0") -> bytes:
    return b"[" + b",".join([item] * n) + b"]"


# ---- fragments ---------------------------------------------------------------------------

INTS = [
    b"0",
    b"-1",
    b"1",
    b"100",
    b"9223372036854775807",
    b"9223372036854775808",
    b"-9223372036854775808",
    b"-9223372036854775809",
    b"18446744073709551616",
    digits(40),
    digits(400, b"-"),
    digits(4299),
    digits(4301),  # past Python's int/str limit
]
FLOATS = [b"0.0", b"-0.0", b"1.5", b"1e308", b"-1e308", b"5e-324", b"1e999", b"-1e999", b"1E+2"]
STRINGS = [
    encode(s)
    for s in (
        "",
        "\x00",
        "a\x00b",
        "../../../../etc/passwd",
        "/",
        ".",
        "..",
        "~",
        "*",
        "%s%n",
        "llm.",
        "llm.*",
        "'; DROP TABLE events; --",
        "\u202e\ufeff",
        "\U0010ffff",
        "github:",
        "github:../..",
        "github:a/b?x=@h#",
        "claude",
        "day",
        "client.x",
        "llm.daily_budget",
    )
] + [rb'"\ud800"', rb'"\udfff\ud800"', rb'"\u0000"', b'"\\', b'"unterminated']
WRONG = [
    b"null",
    b"true",
    b"false",
    b"[]",
    b"{}",
    b'"0"',
    b"0",
    b"[null]",
    b'{"":{}}',
    nested(MAX_DEPTH - 2),  # just within the limit, counting the request's own levels
    nested(MAX_DEPTH + 1),
    nested(1000),
    array_of(100, b'{"type":"client.x","payload":{}}'),
    b'{"a":1,"a":2}',
    b"NaN",
    b"Infinity",
    b"01",
    b"1.",
    b".5",
    b"0x10",
]
# Up to the frame cap: each costs the daemon a millisecond or more, so they are drawn
# less often than the small ones (one draw in ten of ``wrong``).
HUGE = [
    nested(100_000),
    nested(100_000, closed=False),
    b"[" * 100_000,
    array_of(100_000),
    array_of(20_000, b'"client.x"'),
    array_of(20_000, b"{}"),
    digits(20_000),
    encode("x" * 200_000),
]

wrong = st.one_of(
    *[st.sampled_from(WRONG) | st.sampled_from(INTS) | st.sampled_from(STRINGS)] * 3,
    st.sampled_from(HUGE),
)
small_ints = st.integers(-(2**70), 2**70).map(lambda i: str(i).encode())
texts = st.text(max_size=12).map(encode)


def for_type(t: mi.Type) -> Fragment:
    """Fragments a field of type ``t`` accepts, with its extremes."""
    if isinstance(t, mi.IntType):
        return st.sampled_from(INTS) | small_ints
    if isinstance(t, mi.FloatType):
        floats = st.floats(allow_nan=False, allow_infinity=False).map(lambda f: repr(f).encode())
        return st.sampled_from(FLOATS) | st.sampled_from(INTS) | floats
    if isinstance(t, mi.StrType):
        return st.sampled_from(STRINGS) | texts
    if isinstance(t, mi.BoolType):
        return st.sampled_from([b"true", b"false"])
    if isinstance(t, mi.NoneType):
        return st.just(b"null")
    if isinstance(t, mi.UnionType):
        return st.one_of([for_type(x) for x in t.types])
    if isinstance(t, mi.ListType):
        return st.lists(for_type(t.item_type), max_size=3).map(_list)
    if isinstance(t, mi.DictType):
        pairs = st.lists(st.tuples(texts, for_type(t.value_type)), max_size=3)
        return pairs.map(lambda kv: _members([(k, v) for k, v in kv]))
    if isinstance(t, mi.StructType):
        return params_for(t.cls)
    if isinstance(t, mi.LiteralType):
        return st.sampled_from([encode(v) for v in t.values])
    return wrong | texts | small_ints  # Any


def _members(pairs: list[tuple[Tree, Tree]]) -> Tree:
    parts: list[Tree] = [b"{"]
    for i, (k, v) in enumerate(pairs):
        parts += [b"," if i else b"", k, b":", v]
    return (*parts, b"}")


def _object(members: dict[str, Tree]) -> Tree:
    return _members([(encode(k), v) for k, v in members.items()])


def params_for(cls: type[msgspec.Struct]) -> Fragment:
    """An object for ``cls``: each field mostly well typed, sometimes wrong or missing."""
    fields = mi.type_info(cls).fields  # type: ignore[attr-defined]

    def value(f: Any) -> Fragment:
        return st.one_of(for_type(f.type), for_type(f.type), for_type(f.type), wrong)

    required = {f.name: value(f) for f in fields if f.required}
    optional = {f.name: value(f) for f in fields if not f.required}
    known = st.fixed_dictionaries(required, optional=optional)
    unknown = st.dictionaries(st.text(max_size=8), wrong, max_size=1)
    return st.builds(lambda k, u: _object({**u, **k}), known, unknown)


def ids() -> Fragment:
    return st.one_of(small_ints, texts, st.sampled_from(INTS), wrong, st.just(encode("i" * 129)))


# Methods whose success reaches outside the daemon under test: only their refusals are
# exercised (an unknown field rides along, so the params never validate).
ONLY_REFUSED = frozenset({"daemon.stop"})


def request_trees(methods: dict[str, Method], refuse: frozenset[str] = ONLY_REFUSED) -> Fragment:
    def for_method(name: str) -> Fragment:
        params = params_for(methods[name].params)
        if name in refuse:
            # The object's own "{" first, then a field no method has.
            params = params.map(lambda p: (b'{"\\u0000never a field":1,', _after_brace(p)))
        head = b',"method":' + encode(name) + b',"params":'
        return st.builds(lambda i, p: (b'{"id":', i, head, p, b"}"), ids(), params)

    # Built once per method (a flatmap would rebuild and re-validate them every draw).
    return st.one_of([for_method(name) for name in sorted(methods)])


def _after_brace(obj: Tree) -> Tree:
    """An object's tree without its opening brace (``_members`` puts it first)."""
    assert isinstance(obj, tuple) and obj[0] == b"{"
    return obj[1:]


def requests(
    methods: dict[str, Method], refuse: frozenset[str] = ONLY_REFUSED
) -> st.SearchStrategy[bytes]:
    return request_trees(methods, refuse).map(join)


# ---- bodies that are not requests --------------------------------------------------------

INVALID_UTF8 = [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf4\x90\x80\x80"]
INVALID_UTF8 += [b"\x80", b"\xe2\x82"]


def _with_invalid_utf8(bad: bytes, where: int) -> Tree:
    return [
        b'{"id":1,"method":"' + bad + b'"}',
        b'{"id":"' + bad + b'","method":"ping"}',
        b'{"id":1,"method":"events.append","params":{"events":[{"type":"client.x",'
        b'"payload":{"v":"' + bad + b'"}}]}}',
        b'{"id":1,"method":"config.get","params":{"' + bad + b'":1}}',
        bad + b'{"id":1,"method":"ping"}',
    ][where]


non_request_trees = st.one_of(
    st.binary(max_size=256),
    st.builds(_with_invalid_utf8, st.sampled_from(INVALID_UTF8), st.integers(0, 4)),
    wrong,
    st.builds(lambda i: (b'{"id":', i, b',"method":"ping"}'), ids()),
    st.builds(lambda w: (b'{"id":1,"method":', w, b"}"), wrong),
    st.builds(lambda w: (b'{"id":1,"method":"ping","params":', w, b"}"), wrong),
    # The request's own fields beside params: the home it names, the caller's environment.
    st.builds(lambda w: (b'{"id":1,"method":"ping","home":', w, b"}"), wrong | texts),
    st.builds(
        lambda w: (b'{"id":1,"method":"status","env":', w, b"}"),
        wrong | for_type(mi.type_info(dict[str, str])),
    ),
)
non_requests: st.SearchStrategy[bytes] = non_request_trees.map(join)


def body_trees(methods: dict[str, Method]) -> Fragment:
    """Every kind of frame body, most of them requests to real methods (as trees)."""
    reqs = request_trees(methods)
    return st.one_of(non_request_trees, reqs, reqs, reqs)


def sendable(body: bytes) -> bool:
    return len(body) <= MAX_FRAME


# ---- answers -----------------------------------------------------------------------------

CONFIRM_ID = "\x00confirm"  # the id of our answers to the daemon's questions


def is_final(f: dict[str, Any]) -> bool:
    return f.get("id") != CONFIRM_ID and ("result" in f or "error" in f)


def _request_id(body: bytes) -> Any:
    try:
        sent = json.loads(body)
    except (ValueError, RecursionError):
        return None
    rid = sent.get("id") if isinstance(sent, dict) else None
    if isinstance(rid, bool) or not isinstance(rid, int | str):
        return None
    if isinstance(rid, str) and len(rid) > 128:
        return None
    return rid


def check_answer(body: bytes, frames: list[dict[str, Any]]) -> None:
    """One final frame, never ``internal``, under the request's id when it has one."""
    frames = [f for f in frames if f.get("id") != CONFIRM_ID]
    finals = [f for f in frames if is_final(f)]
    assert len(finals) == 1, (body[:200], frames)
    for f in frames:
        err = f.get("error")
        if err is not None:
            assert set(err) >= {"code", "message", "hint", "exit_code", "retryable"}, err
            assert err["code"] != "internal", (body[:300], err)
    if finals[0]["id"] is not None or "result" in finals[0]:
        assert finals[0]["id"] == _request_id(body), (body[:200], finals[0])


def refuse_confirmation(progress: Any) -> bytes | None:
    """The frame a client without a person sends to a ``confirm`` question: no."""
    if isinstance(progress, dict) and isinstance(progress.get("confirm"), dict):
        token = progress["confirm"].get("token")
        answer = {"token": token, "yes": False}
        return frame(encode({"id": CONFIRM_ID, "method": "confirm.answer", "params": answer}))
    return None


def split_frames(buf: bytes) -> tuple[list[dict[str, Any]], bytes]:
    """The complete frames at the start of ``buf`` and what is left."""
    out: list[dict[str, Any]] = []
    while len(buf) >= 4:
        (n,) = HEADER.unpack(buf[:4])
        if len(buf) < 4 + n:
            break
        out.append(json.loads(buf[4 : 4 + n]))
        buf = buf[4 + n :]
    return out, buf


class Conversation:
    """The client's side of one request: the frames read back so far, and the answers to
    the daemon's questions they call for."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []
        self._buf = b""

    def feed(self, chunk: bytes) -> bytes:
        """Take bytes from the daemon; return what to send back (maybe nothing)."""
        got, self._buf = split_frames(self._buf + chunk)
        self.frames += got
        answers = [refuse_confirmation(f.get("progress")) for f in got]
        return b"".join(a for a in answers if a is not None)

    @property
    def done(self) -> bool:
        return any(is_final(f) for f in self.frames)
