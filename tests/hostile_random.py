"""Hostile frames from a seeded ``random.Random``: the classes of tests/hostile_rpc.py
(its own fragment tables), cheap enough to send 100,000 over the real socket in CI.

Hypothesis pays for its shrinking with bookkeeping on every draw (its strategies made
one frame cost more to generate than a daemon takes to serve it); it keeps its place
where a failure wants shrinking, with modest example counts. Here a frame costs tens of
microseconds, and a failure names its seed and its frame: the same seed makes the same
frames again (``TSUKU_HOSTILE_SEED``).

Each frame comes with what the protocol promises for it (:class:`Sent`): the id its
answer carries (none when the daemon reads none), and ``must_be`` when schema/rpc.md
fixes the answer's code (a body that is not UTF-8 or not JSON, nests too deeply, repeats
a key or is not an object is ``bad_request``; a method nobody registered is
``unknown_method``). Whether a body is refused is decided by :func:`read_as_request`, an
independent reading of the rules in Python's own parser, not by asking the daemon's code.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import re
import struct
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import msgspec
import msgspec.inspect as mi

from tests import hostile_rpc as h
from tsukud.rpc.protocol import MAX_DEPTH, MAX_FRAME, MAX_ID_LENGTH
from tsukud.rpc.server import Method

Gen = Callable[[random.Random], h.Tree]

# The ids the checker gives requests so their answers can be told apart when many are
# in flight on one connection: a character no generated text holds opens them.
TAG = "\x1f"
# Text drawn for names, keys and values: ASCII, controls, bidi and zero-width, and
# letters from outside the BMP; never a surrogate (a lone one is not UTF-8 text) nor TAG.
_ALPHABET = (
    [chr(c) for c in range(0x20, 0x7F)] * 4
    + [chr(c) for c in range(0, 0x20) if chr(c) != TAG]
    + list("\u202e\u200b\ufeff\u00e9\u4e2d\U0001f600\U0010ffff")
)


def text(r: random.Random, max_size: int = 12) -> str:
    return "".join(r.choices(_ALPHABET, k=r.randrange(max_size + 1)))


def _texts(r: random.Random) -> h.Tree:
    return h.encode(text(r))


def _small_int(r: random.Random) -> h.Tree:
    return str(r.randint(-(2**70), 2**70)).encode()


def _float(r: random.Random) -> h.Tree:
    return repr(r.uniform(-1e12, 1e12) * 10.0 ** r.randint(-300, 290)).encode()


def pick(table: list[bytes]) -> Gen:
    return lambda r: table[r.randrange(len(table))]


def one_of(*gens: Gen) -> Gen:
    return lambda r: gens[r.randrange(len(gens))](r)


def sometimes(p: float, rare: Gen, usual: Gen) -> Gen:
    return lambda r: rare(r) if r.random() < p else usual(r)


wrong = one_of(pick(h.WRONG), pick(h.INTS), pick(h.STRINGS))
# Up to the frame cap, each costing the daemon (and the checker's parse) a millisecond or
# more: a class of their own (``huge``), drawn about once in three hundred frames.
huge = pick(h.HUGE)


def _list_of(item: Gen) -> Gen:
    return lambda r: h._list([item(r) for _ in range(r.randrange(4))])


def _dict_of(value: Gen) -> Gen:
    return lambda r: h._members([(_texts(r), value(r)) for _ in range(r.randrange(4))])


def for_type(t: mi.Type) -> Gen:
    """Fragments a field of type ``t`` accepts, with its extremes (as
    ``hostile_rpc.for_type`` draws them)."""
    if isinstance(t, mi.IntType):
        return one_of(pick(h.INTS), _small_int)
    if isinstance(t, mi.FloatType):
        return one_of(pick(h.FLOATS), pick(h.INTS), _float)
    if isinstance(t, mi.StrType):
        return one_of(pick(h.STRINGS), _texts)
    if isinstance(t, mi.BoolType):
        return pick([b"true", b"false"])
    if isinstance(t, mi.NoneType):
        return lambda _r: b"null"
    if isinstance(t, mi.UnionType):
        return one_of(*[for_type(x) for x in t.types])
    if isinstance(t, mi.ListType):
        return _list_of(for_type(t.item_type))
    if isinstance(t, mi.DictType):
        return _dict_of(for_type(t.value_type))
    if isinstance(t, mi.StructType):
        return params_for(t.cls)
    if isinstance(t, mi.LiteralType):
        return pick([h.encode(v) for v in t.values])
    return one_of(wrong, _texts, _small_int)  # Any


def params_for(cls: type[msgspec.Struct]) -> Gen:
    """An object for ``cls``: each field mostly well typed, sometimes of a wrong type,
    optional fields sometimes left out, and now and then a field no method has."""
    fields = mi.type_info(cls).fields  # type: ignore[attr-defined]
    values = [(h.encode(f.name), sometimes(1 / 4, wrong, for_type(f.type))) for f in fields]
    required = [f.required for f in fields]

    def gen(r: random.Random) -> h.Tree:
        members: list[tuple[h.Tree, h.Tree]] = [
            (name, value(r))
            for (name, value), needed in zip(values, required, strict=True)
            if needed or r.random() < 0.5
        ]
        if r.random() < 0.3:
            members.insert(0, (h.encode(text(r, 8)), wrong(r)))
        return h._members(members)

    return gen


def hostile_id(r: random.Random) -> h.Tree:
    return one_of(_small_int, _texts, pick(h.INTS), wrong, lambda _r: h.encode("i" * 129))(r)


class Sent(NamedTuple):
    """A frame's body and what its answer must be."""

    body: bytes
    rid: object  # the id its final answer may carry (else None, with ``bad_request``)
    must_be: str | None  # the error code schema/rpc.md fixes for it, if it fixes one


def _with_invalid_utf8(r: random.Random) -> h.Tree:
    bad = h.INVALID_UTF8[r.randrange(len(h.INVALID_UTF8))]
    return h._with_invalid_utf8(bad, r.randrange(5))


class Frames:
    """Hostile frame bodies for every method in ``methods``, from one seed.

    ``refuse`` names methods whose success reaches outside the daemon under test: only
    their refusals are sent (a field no method has rides along). ``rare`` methods are
    drawn a tenth as often as the others (each call costs the daemon milliseconds)."""

    def __init__(
        self,
        seed: int,
        methods: Mapping[str, Method],
        refuse: frozenset[str] = h.ONLY_REFUSED,
        rare: frozenset[str] = frozenset(),
    ) -> None:
        self.seed = seed
        self.r = random.Random(seed)
        self.methods = methods
        self._n = 0
        self._params = {name: params_for(m.params) for name, m in sorted(methods.items())}
        self._names = sorted(methods)
        weights = [0.1 if name in rare else 1.0 for name in self._names]
        self._cum = list(itertools.accumulate(weights))
        self._refuse = refuse
        string_map = _dict_of(one_of(pick(h.STRINGS), _texts))
        self._beside: list[Callable[[random.Random], tuple[bytes, h.Tree]]] = [
            lambda r: (b"params", wrong(r)),
            lambda r: (b"home", one_of(wrong, _texts)(r)),
            lambda r: (b"env", one_of(wrong, string_map)(r)),
        ]

    # ---- the classes, each one frame body ------------------------------------------------

    def request(self) -> h.Tree:
        """A registered method with hostile params (mostly under a tag)."""
        r = self.r
        name = r.choices(self._names, cum_weights=self._cum)[0]
        params = self._params[name](r)
        if name in self._refuse:
            assert isinstance(params, tuple) and params[0] == b"{"
            params = (b'{"\\u0000never a field":1,', params[1:])
        return (b'{"id":', self._id(), b',"method":', h.encode(name), b',"params":', params, b"}")

    def not_a_request(self) -> h.Tree:
        """Bytes, values and objects that are not a request (hostile_rpc's non-requests)."""
        r = self.r
        which = r.randrange(6)
        if which == 0:
            return r.randbytes(r.randrange(257))
        if which == 1:
            return _with_invalid_utf8(r)
        if which == 2:
            return wrong(r)
        if which == 3:
            return (b'{"id":', self._id(), b',"method":', wrong(r), b"}")
        key, value = self._beside[r.randrange(3)](r)
        method = b'"ping"' if r.random() < 0.5 else b'"status"'
        return (b'{"id":', self._id(), b',"method":', method, b',"', key, b'":', value, b"}")

    def repeated_key(self) -> h.Tree:
        """A request naming one key twice in one object, at the top or deeper (issue 31:
        ``{"method":"ping","method":"daemon.stop"}`` stopped the daemon)."""
        r = self.r
        which = r.randrange(4)
        rid = self._id()
        if which == 0:
            second = [b'"daemon.stop"', b'"status"', b'"config.set"', b'"ping"'][r.randrange(4)]
            spelling = [b'"method"', b'"metho\\u0064"', b'"\\u006dethod"'][r.randrange(3)]
            return (b'{"id":', rid, b',"method":"ping",', spelling, b":", second, b"}")
        if which == 1:
            return (b'{"id":', rid, b',"id":', self._id(), b',"method":"ping"}')
        if which == 2:
            depth = r.randrange(1, MAX_DEPTH - 4)
            opening = h.nested(depth, closed=False)
            closing = h.nested(depth)[len(opening) + 1 :]
            value = (opening, b'{"k":1,"k":2}', closing)
            return (b'{"id":', rid, b',"method":"config.get","params":{"key":', value, b"}}")
        key = self._names[r.randrange(len(self._names))]
        return (
            b'{"id":',
            rid,
            b',"method":',
            h.encode(key),
            b',"params":{"a":1,"b":',
            wrong(r),
            b',"a":',
            wrong(r),
            b"}}",
        )

    def unknown_method(self) -> h.Tree:
        name = text(self.r, 40)
        while name in self.methods:
            name = text(self.r, 40)
        return (b'{"id":', self._id(), b',"method":', h.encode(name), b"}")

    def huge(self) -> h.Tree:
        """A body up to the frame cap: as the whole body, a param's value or the id."""
        r = self.r
        which = r.randrange(3)
        if which == 0:
            return huge(r)
        if which == 1:
            name = self._names[r.randrange(len(self._names))]
            if name in self._refuse:
                name = "ping"
            params = (b'{"a":', huge(r), b"}")
            return (
                b'{"id":',
                self._id(),
                b',"method":',
                h.encode(name),
                b',"params":',
                params,
                b"}",
            )
        return (b'{"id":', huge(r), b',"method":"ping"}')

    def json_value(self) -> h.Tree:
        """Any JSON value as the whole body (a request is an object with an id)."""
        r = self.r
        gens = [for_type(mi.type_info(Any)), _list_of(wrong), _dict_of(wrong), _float]
        return gens[r.randrange(len(gens))](r)

    CLASSES: tuple[str, ...] = (
        "request",
        "not_a_request",
        "repeated_key",
        "unknown_method",
        "json_value",
        "huge",
    )
    # Requests to real methods are the bulk, as in hostile_rpc.body_trees.
    WEIGHTS: tuple[float, ...] = (60, 20, 10, 10, 10, 0.4)

    def only(self, classes: tuple[str, ...]) -> None:
        """Draw only these classes (a test of one class), in their usual proportions."""
        weights = dict(zip(self.CLASSES, self.WEIGHTS, strict=True))
        self.CLASSES = classes
        self.WEIGHTS = tuple(weights[c] for c in classes)

    def _id(self) -> h.Tree:
        """A tag (unique on this generator) three times in four, otherwise a hostile id."""
        self._n += 1
        if self.r.random() < 0.75:
            return h.encode(f"{TAG}{self.seed}-{self._n}")
        return hostile_id(self.r)

    def sent(self, kind: str) -> Sent:
        body = h.join(getattr(self, kind)())
        refused, rid = read_as_request(body)
        must_be = "bad_request" if refused else None
        if kind == "unknown_method" and not refused:
            must_be = "unknown_method"
        return Sent(body, rid, must_be)

    def next(self) -> Sent:
        """One frame of a class drawn by WEIGHTS; a body past the frame cap is drawn again
        (the cap is the oversize class's subject)."""
        while True:
            kind = self.r.choices(self.CLASSES, self.WEIGHTS)[0]
            s = self.sent(kind)
            if len(s.body) <= MAX_FRAME:
                return s

    # ---- whole streams: what ends a connection -------------------------------------------

    def oversize_prefix(self) -> bytes:
        """A length past the cap: ``frame_too_large``, then the daemon hangs up."""
        return struct.pack(">I", self.r.randint(MAX_FRAME + 1, 2**32 - 1)) + b"x" * 16

    def truncated(self) -> bytes:
        """A body shorter than its length, then end of file: no answer, a hang-up."""
        n = self.r.randint(1, 4096)
        return struct.pack(">I", n) + b"{" * self.r.randrange(n)

    def raw_bytes(self) -> bytes:
        """Bytes that are not frames at all (read as a length, then whatever follows)."""
        return self.r.randbytes(self.r.randrange(4097))


class _Repeated(Exception):
    pass


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Repeated
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(name)  # NaN, Infinity: not JSON


def _finite(digits: str) -> float:
    value = float(digits)
    if value in (math.inf, -math.inf):
        raise ValueError(digits)  # 1e999: no double holds it
    return value


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _surrogate(s: str) -> bool:
    return any("\ud800" <= c <= "\udfff" for c in s)


def _well_formed(body: bytes, value: Any, limit: int) -> bool:
    """No more than ``limit`` levels of arrays and objects, and no lone surrogate in a
    key or a string (it escapes to valid JSON, but is no Unicode text). Most bodies are
    settled by their bytes: too few brackets to nest that deep, no surrogate's escape."""
    deep = body.count(b"[") + body.count(b"{") > limit
    surrogates = _SURROGATE_ESCAPE.search(body) is not None
    pending = [(value, 1)] if deep or surrogates else []
    while pending:
        v, depth = pending.pop()
        if type(v) is str:
            if surrogates and _surrogate(v):
                return False
        elif type(v) is dict or type(v) is list:
            if depth > limit:
                return False
            if type(v) is dict:
                if surrogates and any(_surrogate(k) for k in v):
                    return False
                v = v.values()
            if surrogates:
                pending.extend((x, depth + 1) for x in v)
            else:
                pending.extend((x, depth + 1) for x in v if type(x) is dict or type(x) is list)
    return True


def read_as_request(body: bytes) -> tuple[bool, object]:
    """Whether schema/rpc.md makes ``body`` a ``bad_request`` (read by Python's own
    parser, held to the rules: UTF-8 text, JSON, no key twice in one object, no more than
    MAX_DEPTH levels, an object with a usable id and method and only a request's fields),
    and the id its answer may carry (None when it has no usable one)."""
    try:
        value = json.loads(
            body.decode("utf-8"),
            object_pairs_hook=_no_repeats,
            parse_constant=_no_constant,
            parse_float=_finite,
        )
    except (UnicodeDecodeError, ValueError, RecursionError, _Repeated):
        return True, h._request_id(body)
    if not isinstance(value, dict):
        return True, None
    rid = value.get("id")
    too_long = isinstance(rid, str) and len(rid) > MAX_ID_LENGTH
    if isinstance(rid, bool) or not isinstance(rid, int | str) or too_long:
        rid = None
    if rid is None or not _well_formed(body, value, MAX_DEPTH):
        return True, rid
    method, home = value.get("method"), value.get("home")
    params, env = value.get("params", {}), value.get("env", {})
    refused = (
        not isinstance(method, str)
        or not set(value) <= {"id", "method", "params", "env", "home"}
        or not isinstance(params, dict)
        or not isinstance(env, dict)
        or not all(isinstance(v, str) for v in env.values())
        or not isinstance(home, str | None)
    )
    return refused, rid
