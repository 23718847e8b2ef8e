"""A CPAN author directory's ``CHECKSUMS``, read as data and never run.

PAUSE writes one per directory below ``authors/id/`` (``A/AU/AUTHOR/CHECKSUMS``) with
``CPAN::Checksums``: Data::Dumper's text of a Perl hash, ``$cksum = { 'Dist-1.0.tar.gz'
=> { 'sha256' => '…', 'size' => 1234, … }, … };``, clearsigned by PAUSE's key inside a
``-----BEGIN PGP SIGNED MESSAGE-----`` block (and preceded by ``0&&<<'';`` so that the
whole file is valid Perl too). cpanm's ``--verify`` runs that text with ``eval``; the
text comes from a mirror, so here it is never evaluated and no perl is started: the
armour is stripped, then a strict tokenizer reads the one subset of Perl that
Data::Dumper writes for it (single- or double-quoted strings, ``=>``, ``,``, nested
``{}``, plain numbers, ``#`` comments) and refuses everything else (``do``, ``sub``,
backticks, a bareword, a ``$x`` or ``@x`` that a double-quoted string would
interpolate, a second statement, unbalanced braces, a key given twice, more text or
entries than any author's directory has) with :class:`CpanChecksumsInvalid`.

**The PGP signature is not checked**: the armour is only taken off, so the file says
what the mirror says. What it buys is that a mirror (or a proxy) that swaps a
distribution's file must swap the author's ``CHECKSUMS`` consistently as well; a mirror
that lies about both is not caught (docs/install.md, "CPAN distributions").
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import msgspec

from tsukud.errors import TsukuError

#: The largest CHECKSUMS read: a bound far above what an author directory lists.
MAX_BYTES = 16 * 1024 * 1024
#: The most files one author directory's CHECKSUMS may list.
MAX_ENTRIES = 100_000
#: The most fields one file's entry may have (CPAN::Checksums writes about ten).
MAX_FIELDS = 64
#: The file's hash holds each file's hash of fields: two levels, no deeper.
MAX_DEPTH = 2

_HINT = (
    "The mirror's CHECKSUMS is not the plain data CPAN publishes, so it cannot vouch for "
    "the distribution; it was read, never run. Use another mirror (cpan.mirror_url); "
    "nothing was installed."
)

_SIGNED = "-----BEGIN PGP SIGNED MESSAGE-----"
_SIGNATURE = "-----BEGIN PGP SIGNATURE-----"
_SIGNATURE_END = "-----END PGP SIGNATURE-----"
# PAUSE's first line, a heredoc that makes Perl skip the armour's header.
_PERL_PREAMBLE = re.compile(r"0&&<<'';(?:[ \t]*#[^\n]*)?\n")
_ARMOUR_HEADER = re.compile(r"[A-Za-z][A-Za-z0-9-]*: [^\n]*")
_SIGNATURE_LINE = re.compile(r"[A-Za-z0-9+/=]*|[A-Za-z][A-Za-z0-9-]*: [^\n]*")
_SHA256 = re.compile(r"[0-9a-f]{64}")

# One token of the subset. Order matters: `=>` before `=`.
_TOKEN = re.compile(
    r"""
      (?P<ws>[ \t\n]+)
    | (?P<comment>\#[^\n]*)
    | (?P<var>\$[A-Za-z_][A-Za-z0-9_]*)
    | (?P<arrow>=>)
    | (?P<punct>[{},;=])
    | (?P<single>'(?:[^'\\]|\\.)*')
    | (?P<double>"(?:[^"\\]|\\.)*")
    | (?P<number>-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,18})?(?![A-Za-z0-9_.]))
    | (?P<end>__END__(?=\n|$))
    """,
    re.VERBOSE | re.DOTALL,
)
# What a double-quoted string may escape; anything else (\x{..}, \N{..}, \l, \U ...) is
# refused rather than interpreted.
_DOUBLE_ESCAPES = {"\\": "\\", '"': '"', "$": "$", "@": "@", "n": "\n", "t": "\t"}


class CpanChecksumsInvalid(TsukuError):
    """A mirror's ``CHECKSUMS`` that is not the data CPAN writes (``cpan_checksums.py``)."""

    code = "cpan_checksums_invalid"


class FileSums(msgspec.Struct, frozen=True, kw_only=True):
    """What CHECKSUMS says of one file: its sha256 (lowercase hex) and size, when given."""

    sha256: str | None = None
    size: int | None = None


Value = str | dict[str, "Value"]


def _refuse(why: str, text: str = "", at: int | None = None) -> CpanChecksumsInvalid:
    where = f" (line {text.count(chr(10), 0, at) + 1})" if at is not None else ""
    return CpanChecksumsInvalid(f"the mirror's CHECKSUMS is refused: {why}{where}", hint=_HINT)


# ---------------------------------------------------------------------------- armour


def strip_armour(text: str) -> str:
    """The signed message's body (dash-escaping undone), or ``text`` itself when it is
    not signed. Nothing may stand outside the armour but PAUSE's ``0&&<<'';`` line: text
    there would be Perl that a reader of the signed part does not see."""
    lines = text.split("\n")
    if _SIGNED not in lines:
        if _SIGNED in text or _SIGNATURE in text:
            raise _refuse("a signed message that does not start a line")
        return text
    start = lines.index(_SIGNED)
    if start and not (start == 1 and _PERL_PREAMBLE.fullmatch(lines[0] + "\n")):
        raise _refuse("text before the signed message", text, 0)
    i = start + 1
    while i < len(lines) and lines[i]:
        if not _ARMOUR_HEADER.fullmatch(lines[i]):
            raise _refuse(f"the armour header {lines[i][:40]!r}", text, _offset(lines, i))
        i += 1
    if _SIGNATURE not in lines[i:] or _SIGNATURE_END not in lines[i:]:
        raise _refuse("a signed message without its signature")
    sig = lines.index(_SIGNATURE, i)
    end = lines.index(_SIGNATURE_END, sig)
    for n in range(sig + 1, end):
        if not _SIGNATURE_LINE.fullmatch(lines[n]):
            raise _refuse("text inside the signature", text, _offset(lines, n))
    if any(line.strip() for line in lines[end + 1 :]):
        raise _refuse("text after the signature", text, _offset(lines, end + 1))
    body = []
    for n in range(i + 1, sig):
        line = lines[n]
        if line.startswith("- "):
            line = line[2:]  # RFC 4880's dash-escaping
        elif line.startswith("-"):
            raise _refuse("an unescaped dash line in the signed message", text, _offset(lines, n))
        body.append(line)
    return "\n".join(body) + "\n"


def _offset(lines: list[str], n: int) -> int:
    return sum(len(line) + 1 for line in lines[:n])


# ---------------------------------------------------------------------------- the literal


def _tokens(text: str) -> Iterator[tuple[str, str, int]]:
    """``(kind, text, offset)`` of each token but blanks and comments, read as asked for
    (a refusal costs only what was read); anything outside the subset is refused where
    it stands."""
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            found = re.match(r"\w{1,20}|.", text[pos:], re.DOTALL)
            assert found is not None
            raise _refuse(f"{found.group()!r} is not plain data", text, pos)
        kind = m.lastgroup
        assert kind is not None
        if kind == "end":
            if text[m.end() :].strip():
                raise _refuse("text after __END__", text, m.end())
            return
        if kind not in ("ws", "comment"):
            yield kind, m.group(), pos
        pos = m.end()


def _string(kind: str, raw: str, text: str, at: int) -> str:
    inner = raw[1:-1]
    if kind == "single":  # Perl's '...': only \\ and \' are escapes
        return re.sub(r"\\([\\'])", r"\1", inner)
    out = []
    i = 0
    while i < len(inner):
        c = inner[i]
        if c in "$@":
            raise _refuse(f"{c} in a double-quoted string (Perl would interpolate it)", text, at)
        if c == "\\":
            nxt = inner[i + 1]
            if nxt not in _DOUBLE_ESCAPES:
                raise _refuse(f"the escape \\{nxt} in a double-quoted string", text, at)
            out.append(_DOUBLE_ESCAPES[nxt])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


class _Reader:
    """A recursive descent over the tokens: ``HASH := '{' (KEY '=>' VALUE ',')* '}'``,
    the last comma optional, ``VALUE := STRING | NUMBER | HASH``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.ahead: tuple[str, str, int] | None = next(self.tokens, None)

    def next(self, want: str | None = None) -> tuple[str, str, int]:
        tok = self.ahead
        if tok is None:
            raise _refuse("it ends inside the hash (unbalanced braces)", self.text, len(self.text))
        if want is not None and tok[1] != want:
            raise _refuse(f"{tok[1][:20]!r} where {want!r} belongs", self.text, tok[2])
        self.ahead = next(self.tokens, None)
        return tok

    def peek(self) -> str | None:
        return None if self.ahead is None else self.ahead[1]

    def hash(self, depth: int) -> dict[str, Value]:
        at = self.next("{")[2]
        if depth > MAX_DEPTH:
            raise _refuse("hashes nested deeper than CPAN's", self.text, at)
        out: dict[str, Value] = {}
        while self.peek() != "}":
            kind, raw, at = self.next()
            if kind not in ("single", "double"):
                raise _refuse(f"{raw[:20]!r} where a quoted key belongs", self.text, at)
            key = _string(kind, raw, self.text, at)
            if key in out:  # Perl keeps the last: a reader may stop at the first
                raise _refuse(f"the key {key[:60]!r} given twice", self.text, at)
            self.next("=>")
            out[key] = self.value(depth)
            if len(out) > (MAX_ENTRIES if depth == 1 else MAX_FIELDS):
                raise _refuse("more entries than any author's directory has", self.text, at)
            if self.peek() != "}":
                self.next(",")
        self.next("}")
        return out

    def value(self, depth: int) -> Value:
        if self.peek() == "{":
            return self.hash(depth + 1)
        kind, raw, at = self.next()
        if kind in ("single", "double"):
            return _string(kind, raw, self.text, at)
        if kind == "number":
            return raw
        raise _refuse(f"{raw[:20]!r} where a value belongs", self.text, at)


def read_literal(body: str) -> dict[str, Value]:
    """``$cksum = { … };`` (then ``__END__`` or nothing) read as the hash it spells."""
    reader = _Reader(body)
    if reader.ahead is None:
        raise _refuse("no $cksum = { ... }; in it")
    kind, name, at = reader.next()
    if (kind, name) != ("var", "$cksum"):
        raise _refuse(f"{name[:20]!r} where '$cksum' belongs", body, at)
    reader.next("=")
    literal = reader.hash(1)
    reader.next(";")
    if reader.ahead is not None:
        raise _refuse("a second statement", body, reader.ahead[2])
    return literal


# ---------------------------------------------------------------------------- the file


def parse_checksums(data: bytes) -> dict[str, FileSums]:
    """A ``CHECKSUMS`` file's entries, file name → :class:`FileSums` (entries that are
    not files, ``isdir``, carry neither). The signature is not checked (module doc)."""
    if len(data) > MAX_BYTES:
        raise _refuse(f"{len(data)} bytes, more than {MAX_BYTES}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _refuse("not UTF-8 text") from None
    text = text.replace("\r\n", "\n")
    bad = re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text)
    if bad:
        raise _refuse(f"the control character {bad.group()!r}", text, bad.start())
    literal = read_literal(strip_armour(text))
    return {name: _sums(name, fields) for name, fields in literal.items()}


def _sums(name: str, fields: Value) -> FileSums:
    if not isinstance(fields, dict):
        raise _refuse(f"the entry for {name[:80]!r} is not a hash of fields")
    for key, value in fields.items():
        if isinstance(value, dict):
            raise _refuse(f"the field {key[:40]!r} of {name[:80]!r} is a hash")
    sha256 = fields.get("sha256")
    size = fields.get("size")
    if sha256 is not None and not (isinstance(sha256, str) and _SHA256.fullmatch(sha256.lower())):
        raise _refuse(f"the sha256 of {name[:80]!r} is not 64 hex digits")
    if size is not None and not (isinstance(size, str) and size.isascii() and size.isdigit()):
        raise _refuse(f"the size of {name[:80]!r} is not a whole number")
    return FileSums(
        sha256=sha256.lower() if isinstance(sha256, str) else None,
        size=int(size) if isinstance(size, str) else None,
    )
