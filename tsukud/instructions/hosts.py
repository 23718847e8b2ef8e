"""What a host name on an install page really is (pure, stdlib only).

A page can name ``paypal.com`` with a Cyrillic ``a`` (U+0430), or its punycode ``xn--…`` form,
and a person reading the preview sees "paypal.com". So every host a page-derived recipe
uses is shown in its ASCII (IDNA, ``xn--``) form, and flagged when it is not plain
ASCII (:func:`lookalike`):

* ``punycode``: a label is (or becomes) ``xn--…``: the name has non-ASCII letters;
* ``mixed scripts``: one label mixes letters of several scripts (Latin with Cyrillic,
  Greek, Armenian, …), the usual homoglyph trick;
* ``looks like``: the name's letters map to ASCII ones that look the same. What this
  covers, honestly: characters whose Unicode compatibility form (NFKC) is ASCII
  (fullwidth letters, ligatures, mathematical alphanumerics) and a table of the
  Cyrillic, Greek and Armenian letters that render like Latin ones
  (:data:`CONFUSABLE`). It is not Unicode's full confusables list (UTS #39); any
  non-ASCII name is flagged as punycode whatever this table says.

:func:`registrable_domain` is the name a site owner registers (``example.co.uk`` for
``dl.example.co.uk``), read from the Public Suffix List where the system has it
(Debian's ``publicsuffix`` package, :data:`PSL_PATH`), else a short built-in list of
shared suffixes; an IP address or a one-label name is its own registrable domain.
"""

from __future__ import annotations

import contextlib
import encodings.idna
import ipaddress
import unicodedata
from functools import cache
from pathlib import Path
from typing import Final

PSL_PATH: Final = Path("/usr/share/publicsuffix/public_suffix_list.dat")

# Suffixes under which anyone may register a name, when no Public Suffix List is there:
# country second levels and the common shared hosting domains (so acme.github.io is
# acme's, not every github.io page's).
_FALLBACK_SUFFIXES: Final = frozenset(
    {
        *(f"{s}.{cc}" for s in ("co", "com", "net", "org", "ac", "gov", "edu") for cc in (
            "uk", "au", "jp", "nz", "in", "br", "cn", "za", "tw", "kr", "il", "sg", "hk",
        )),
        "github.io", "gitlab.io", "netlify.app", "vercel.app", "pages.dev", "web.app",
        "herokuapp.com", "readthedocs.io", "blogspot.com", "firebaseapp.com",
        "s3.amazonaws.com", "cloudfront.net", "azurewebsites.net", "sourceforge.net",
        "appspot.com", "fly.dev", "onrender.com", "workers.dev", "codeberg.page",
    }
)  # fmt: skip

# Letters of other scripts that render like ASCII ones (Cyrillic, Greek, Armenian).
CONFUSABLE: Final = {
    **dict.fromkeys("\u0430\u0251\u03b1", "a"),
    **dict.fromkeys("\u0432\u03b2", "b"),
    **dict.fromkeys("\u0441\u03f2", "c"),
    **dict.fromkeys("\u0501", "d"),
    **dict.fromkeys("\u0435\u0454", "e"),
    **dict.fromkeys("\u04bb", "h"),
    **dict.fromkeys("\u0456\u0131\u03b9", "i"),
    **dict.fromkeys("\u0458", "j"),
    **dict.fromkeys("\u043a\u03ba", "k"),
    **dict.fromkeys("\u04cf", "l"),
    **dict.fromkeys("\u043c", "m"),
    **dict.fromkeys("\u0578\u03b7", "n"),
    **dict.fromkeys("\u043e\u03bf\u0585", "o"),
    **dict.fromkeys("\u0440\u03c1", "p"),
    **dict.fromkeys("\u051b", "q"),
    **dict.fromkeys("\u0433", "r"),
    **dict.fromkeys("\u0455", "s"),
    **dict.fromkeys("\u0442", "t"),
    **dict.fromkeys("\u03c5\u057d", "u"),
    **dict.fromkeys("\u03bd\u0475", "v"),
    **dict.fromkeys("\u051d\u0461", "w"),
    **dict.fromkeys("\u0445\u03c7", "x"),
    **dict.fromkeys("\u0443\u03b3", "y"),
    **dict.fromkeys("\u1d22", "z"),
}


def ascii_host(host: str) -> str:
    """``host`` in ASCII: each non-ASCII label in its IDNA ``xn--`` form (Python's
    IDNA 2003 codec, which also folds compatibility forms such as fullwidth letters).
    A label the codec refuses is shown with ``\\u`` escapes, never as it renders."""
    labels = []
    for label in host.lower().split("."):
        if label.isascii():
            labels.append(label)
            continue
        try:
            labels.append(encodings.idna.ToASCII(label).decode("ascii"))
        except UnicodeError:
            labels.append(label.encode("ascii", "backslashreplace").decode("ascii"))
    return ".".join(labels)


def unicode_host(host: str) -> str:
    """``host`` as it renders: each ``xn--`` label decoded (left as is when invalid)."""
    labels = []
    for label in host.lower().split("."):
        if label.startswith("xn--"):
            with contextlib.suppress(UnicodeError):
                label = encodings.idna.ToUnicode(label)
        labels.append(label)
    return ".".join(labels)


def _script(ch: str) -> str | None:
    """The script of a letter, from its Unicode name (LATIN, CYRILLIC, GREEK, ...)."""
    if not ch.isalpha():
        return None
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0] if name else "UNKNOWN"


def skeleton(text: str) -> str:
    """The ASCII look of ``text`` as far as :data:`CONFUSABLE` and NFKC say."""
    out = []
    for ch in text:
        folded = unicodedata.normalize("NFKC", ch).lower()
        out.append(CONFUSABLE.get(ch, folded if folded.isascii() else ch))
    return "".join(out)


def lookalike(host: str) -> tuple[str, ...]:
    """Why ``host`` may not be what it looks like; empty for a plain ASCII name."""
    shown = unicode_host(host)
    flags: list[str] = []
    if shown.isascii():
        return ()
    flags.append(f"punycode: a non-ASCII name, in ASCII {ascii_host(shown)}")
    for label in shown.split("."):
        scripts = sorted({s for ch in label if (s := _script(ch))})
        if len(scripts) > 1:
            flags.append(f"mixed scripts in {label!r}: {'+'.join(scripts)}")
    looks = skeleton(shown)
    if looks.isascii() and looks != shown:
        flags.append(f"looks like {looks}")
    return tuple(flags)


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


@cache
def _psl() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(rules, wildcard parents, exceptions) of the Public Suffix List, empty when the
    system has none."""
    try:
        lines = PSL_PATH.read_text(encoding="utf-8").splitlines()
    except OSError:
        return frozenset(), frozenset(), frozenset()
    rules: set[str] = set()
    wild: set[str] = set()
    exceptions: set[str] = set()
    for raw in lines:
        line = raw.strip().split(" ", 1)[0]
        if not line or line.startswith("//"):
            continue
        line = ascii_host(line.lstrip("!*.")) if not line.isascii() else line
        if raw.strip().startswith("!"):
            exceptions.add(line.lstrip("!"))
        elif raw.strip().startswith("*."):
            wild.add(line.removeprefix("*."))
        else:
            rules.add(line)
    return frozenset(rules), frozenset(wild), frozenset(exceptions)


def _suffix_len(labels: list[str]) -> int:
    """How many trailing labels are a public suffix."""
    rules, wild, exceptions = _psl()
    if not rules:
        for n in (3, 2):
            if len(labels) > n and ".".join(labels[-n:]) in _FALLBACK_SUFFIXES:
                return n
        return 1
    best = 1  # the default rule "*": the top-level label
    for n in range(1, len(labels) + 1):
        name = ".".join(labels[-n:])
        if name in exceptions:
            return n - 1
        if name in rules:
            best = max(best, n)
        if n > 1 and ".".join(labels[-(n - 1) :]) in wild:
            best = max(best, n)
    return best


def registrable_domain(host: str) -> str:
    """The registered name ``host`` belongs to (in ASCII); the host itself for an IP
    address, a one-label name or a name that is itself a public suffix."""
    host = ascii_host(host.rstrip(".").lower())
    if is_ip(host) or "." not in host:
        return host
    labels = host.split(".")
    n = _suffix_len(labels)
    if n >= len(labels):
        return host
    return ".".join(labels[-(n + 1) :])
