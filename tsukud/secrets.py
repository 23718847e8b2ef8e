"""What a secret looks like, and the one place that removes it.

Every sink the daemon owns (log lines, event payloads, error frames, LLM provider
errors and recordings, create's prompts and repair feedback) passes its text through
this module, so there is one marker, one length threshold and one idea of a secret:

- values registered at run time (configured API keys, the environment handed to a
  validation container), replaced wherever they appear, because an upstream error or
  a URL can echo a key under any name;
- the value of any credential-like key (``password=…``, ``token: …``, ``"api_key":
  "…"``, ``STRIPE_KEY=…``, ``REGISTRY_AUTH=…``), whatever its characters: a numeric password
  is still a password;
- the value after a credential flag on a command line (``--password VALUE``,
  ``--token VALUE``, ``--api-key VALUE``), as a shell line or a process listing shows it;
- ``Authorization`` headers, bearer/basic credentials, ``user:pass@`` in URLs and
  private key blocks;
- the shapes of well-known tokens (``ghp_``, ``sk-ant-``, ``AIza``, …), in case one
  turns up that nobody registered.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

REDACTED = "[REDACTED]"

# Registered values shorter than this are not scrubbed: replacing "1" or "on" everywhere
# would destroy the text without protecting anything real. A registered value is known to
# be a secret (not a guess), so anything from four characters on goes: a short
# validation password is still the password.
MIN_SECRET_LENGTH = 4

# A credential-like name *ends* in one of these words, so ``GITHUB_TOKEN``,
# ``client_secret`` and ``x-api-key`` are secret and ``max_tokens``, ``token_count`` or
# ``secrets`` are not. ``token`` counts only as a whole word or after a separator
# (``mytoken`` is not a credential); ``pwd`` and ``pass`` only after a separator
# (``PWD`` and ``OLDPWD`` are directories, "pass: 3" a test count; ``DB_PASS`` is not).
# ``auth`` is like ``token`` (``auth``, ``REGISTRY_AUTH``; not ``author`` or ``oauth``).
# ``key`` counts only after ``_`` or ``-`` (``STRIPE_KEY``, ``signing-key``): a bare
# ``key`` is how tsuku names a setting ("unknown key: llm.foo") and ``server.key`` a
# file, and ``monkey``/``keyboard`` are words.
_WORD_OR_SUFFIX = "token|auth"
_SUFFIX_ONLY = "pwd|pass"
_KEY_SUFFIX = "key"
_WORDS = (
    r"api[_-]?key|apikey|secret|secret[_-]?key|passw(?:or)?d|passphrase|authorization"
    r"|credentials?|access[_-]?key|private[_-]?key|session[_-]?id|cookie|auth[_-]?token"
)
_SECRET_NAME = (
    rf"(?:[\w.-]*[_.-])?(?:{_WORD_OR_SUFFIX})|[\w.-]*[_.-](?:{_SUFFIX_ONLY})"
    rf"|[\w.-]*[_-]{_KEY_SUFFIX}|[\w.-]*(?:{_WORDS})"
)

# ``key=value``, ``key: value`` and JSON/YAML ``"key": "value"`` with a credential-like
# key. A quoted value is taken whole (spaces and all). A bare one after ``=`` runs to
# whitespace or a delimiter (``A_TOKEN=x B=y`` is two words of a shell line); after
# ``:`` it runs to the end of the line or a delimiter, as YAML and headers read it
# (``passphrase: correct horse battery`` is one value). The match starts at the word,
# not the whole key: scanning every prefix of every word made this the slowest pattern
# by far. A word right after ``/`` is a path's (``file:///etc/passwd: refused``), not a
# key's name.
_PAIR_HEAD = (
    rf"(?i)(?P<head>(?<![/\\])(?:(?:(?<![\w.-])|(?<=[_.-]))(?:{_WORD_OR_SUFFIX})|(?<=[_.-])(?:{_SUFFIX_ONLY})"
    rf"|(?<=[_-]){_KEY_SUFFIX}|{_WORDS})[\"']?[ \t]*"
)
_QUOTED = r"\"[^\"\r\n]*\"|'[^'\r\n]*'"
_PAIR = rf"{_PAIR_HEAD}=[ \t]*)(?!{re.escape(REDACTED)})(?P<value>{_QUOTED}|[^\s\"',;&)\]}}]+)"
# A value after ``:`` runs to the end of the line, but stops before a word that starts
# another credential pair (``token: 1234 password=x`` is two secrets, the second one's
# name kept; ``password: correct horse=battery`` stays one) and before a value already
# replaced.
_STOP = rf"\s+(?:{_SECRET_NAME})[\"']?[ \t]*[=:]|{re.escape(REDACTED)}"
_COLON_END = rf"(?:(?!{re.escape(REDACTED)})[^\s\"',;&)\]}}])"
_COLON_PAIR = (
    rf"{_PAIR_HEAD}:[ \t]*)(?!{re.escape(REDACTED)})"
    rf"(?P<value>{_QUOTED}|[^\s\"',;&)\]}}](?:(?:(?!{_STOP})[^\r\n\"',;&)\]}}])*{_COLON_END})?)"
)
# ``--password VALUE``, ``--github-token VALUE``: a credential flag and the word after
# it, unless that word is the next flag. ``--token=x`` is a pair above; ``--max-tokens 9``
# and ``--password-stdin`` do not end in a credential word.
_CLI_FLAG = (
    r"(?i)(?<![\w-])(?P<head>--(?:[a-z0-9]+-)*(?:password|passwd|token|secret|api-?key|auth)"
    rf"[ \t]+)(?!{re.escape(REDACTED)})(?P<value>{_QUOTED}|(?!-)[^\s\"']+)"
)
_URL_USERINFO = r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s:@]+(?::[^/\s@]*)?@"
_AUTH_HEADER = r"(?im)\b((?:proxy-)?authorization\s*[:=]\s*)(?![\"'])[^\r\n]+"
_BEARER = r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{6,}"
_KNOWN_SHAPES = (
    r"gh[pousr]_[A-Za-z0-9]{16,}"
    r"|github_pat_[A-Za-z0-9_]{16,}"
    r"|sk-ant-[A-Za-z0-9_-]{8,}"
    r"|(?<![A-Za-z0-9])sk-(?:proj-)?[A-Za-z0-9_-]{16,}"
    r"|AIza[0-9A-Za-z_-]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{8,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|glpat-[A-Za-z0-9_-]{16,}"
    r"|tvly-[A-Za-z0-9-]{16,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
)
_PRIVATE_KEY = r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"


class _Compiled(NamedTuple):
    secret_name: re.Pattern[str]
    pair: re.Pattern[str]
    colon_pair: re.Pattern[str]
    cli_flag: re.Pattern[str]
    url_userinfo: re.Pattern[str]
    auth_header: re.Pattern[str]
    bearer: re.Pattern[str]
    token_shapes: re.Pattern[str]
    private_key: re.Pattern[str]


@functools.cache
def _compiled() -> _Compiled:
    """The patterns above, compiled at their first use rather than at import: compiling
    them takes ~6 ms, which every daemon start and every command that imports this
    module would pay, while most never redact anything that needs them (the triggers
    below turn nearly every text away first)."""
    return _Compiled(
        re.compile(_SECRET_NAME, re.I),
        re.compile(_PAIR),
        re.compile(_COLON_PAIR),
        re.compile(_CLI_FLAG),
        re.compile(_URL_USERINFO),
        re.compile(_AUTH_HEADER),
        re.compile(_BEARER),
        re.compile(_KNOWN_SHAPES),
        re.compile(_PRIVATE_KEY, re.S),
    )


# Lower-case fragments at least one of which every pattern above needs: text holding
# none of them (most log lines and events) skips the regular expressions entirely.
_TRIGGERS = (
    "token", "key", "secret", "pass", "pwd", "auth", "credential", "session", "cookie",
    "bearer", "basic", "://", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
    "sk-", "aiza", "xox", "akia", "glpat-", "tvly-", "eyj",
)  # fmt: skip


@functools.lru_cache(maxsize=1024)
def is_secret_name(name: str) -> bool:
    """Whether a field, header, variable or config key of this name holds a credential."""
    return bool(_compiled().secret_name.fullmatch(name))


def _pair(match: re.Match[str]) -> str:
    value = match["value"]
    quote = value[0] if value[0] in "\"'" and len(value) > 1 and value[-1] == value[0] else ""
    return f"{match['head']}{quote}{REDACTED}{quote}"


def _known(values: Iterable[str | None]) -> tuple[str, ...]:
    """Values worth scrubbing, longest first so a key that contains another goes whole."""
    kept = {v for v in values if v and len(v) >= MIN_SECRET_LENGTH}
    return tuple(sorted(kept, key=len, reverse=True))


def _may_hold_pattern(text: str) -> bool:
    low = text.lower()
    for trigger in _TRIGGERS:  # noqa: SIM110 (twice as fast as any() over a generator)
        if trigger in low:
            return True
    return False


# A batch's texts folded for ``_any_may_hold_pattern``: ASCII letters lowered and digits
# dropped. No trigger holds a digit or a newline, so a trigger in a text is still in its
# folded line (dropping digits can join letters into a false alarm, never split a
# match), and texts that differ only in their numbers (a client's counters, ids,
# timings: nearly every event of a batch) fold to one line, searched once.
_FOLD_CASE = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
_DIGITS = b"0123456789"
_BYTE_TRIGGERS = tuple(t.encode("ascii") for t in _TRIGGERS)


def _any_may_hold_pattern(texts: Sequence[str]) -> bool:
    """Whether any of ``texts`` (single lines: JSON) may hold a secret-shaped
    pattern: ``any(_may_hold_pattern(t) for t in texts)`` or a false alarm, at a
    fraction of its cost. Text that is not ASCII takes the plain search: Unicode case
    folding can make ASCII letters out of other characters (the Kelvin sign lowers
    to ``k``), which a byte fold would miss."""
    joined = "\n".join(texts)
    if not joined.isascii():
        return _may_hold_pattern(joined)
    folded = joined.encode("ascii").translate(_FOLD_CASE, _DIGITS)
    distinct = b"\n".join(set(folded.split(b"\n")))
    for trigger in _BYTE_TRIGGERS:  # noqa: SIM110 (as in _may_hold_pattern)
        if trigger in distinct:
            return True
    return False


def _scrub(text: str, known: tuple[str, ...]) -> str:
    for value in known:
        if value in text:
            text = text.replace(value, REDACTED)
    if not _may_hold_pattern(text):
        return text
    p = _compiled()
    text = p.private_key.sub(REDACTED, text)
    text = p.url_userinfo.sub(rf"\1{REDACTED}@", text)
    text = p.auth_header.sub(rf"\1{REDACTED}", text)
    text = p.bearer.sub(rf"\1 {REDACTED}", text)
    text = p.token_shapes.sub(REDACTED, text)
    return p.cli_flag.sub(_pair, p.colon_pair.sub(_pair, p.pair.sub(_pair, text)))


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` without ``secrets`` or anything that looks like a credential."""
    return _scrub(text, _known(secrets))


class Redactor:
    """The secrets known at run time, and redaction of text and JSON-like values."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._configured: tuple[str, ...] = ()
        self._scoped: list[tuple[str, ...]] = []
        self._values: tuple[str, ...] = ()
        self.update(secrets)

    def update(self, secrets: Iterable[str | None]) -> None:
        """Replace the configured secrets (config load and reload)."""
        self._configured = _known(secrets)
        self._refresh()

    @contextmanager
    def scoped(self, values: Iterable[str | None]) -> Iterator[None]:
        """Also redact ``values`` while the block runs (e.g. the environment handed to a
        container whose output is being read)."""
        entry = _known(values)
        self._scoped.append(entry)
        self._refresh()
        try:
            yield
        finally:
            self._scoped.remove(entry)
            self._refresh()

    def _refresh(self) -> None:
        self._values = _known((*self._configured, *(v for s in self._scoped for v in s)))

    @property
    def values(self) -> tuple[str, ...]:
        """The registered secrets, longest first."""
        return self._values

    def __bool__(self) -> bool:
        return bool(self._values)

    def suspect(self, s: str) -> bool:
        """Whether ``s`` may hold something to redact: a cheap test that lets hot paths
        (every appended event) skip the work for ordinary text."""
        for value in self._values:  # a plain loop: this runs for every event
            if value in s:
                return True
        return _may_hold_pattern(s)

    def suspects(self, texts: Sequence[str]) -> list[int]:
        """The indexes of ``texts`` (single lines: JSON) that ``suspect`` would flag,
        found with one search of the batch first: a batch of ordinary events (nearly
        all of them) costs one pass over its distinct shapes, not one per event."""
        joined = "\n".join(texts)
        if not any(value in joined for value in self._values) and not _any_may_hold_pattern(texts):
            return []
        return [i for i, text in enumerate(texts) if self.suspect(text)]

    def text(self, s: str) -> str:
        """``s`` without registered secrets or anything shaped like one."""
        return _scrub(s, self._values)

    def value(self, obj: Any, _key: str = "") -> Any:
        """A JSON-like structure without secrets: credential-named fields holding a
        string or number are replaced whole, every string is scrubbed as text."""
        if _key and is_secret_name(_key) and _scalar_secret(obj):
            return REDACTED
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {k: self.value(v, str(k)) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.value(v) for v in obj]
        return obj


def _scalar_secret(obj: Any) -> bool:
    if isinstance(obj, bool):
        return False
    return (isinstance(obj, str) and obj != "") or isinstance(obj, int | float)


# The daemon's process-wide redactor; config loading fills it.
REDACTOR = Redactor()
