"""A corpus: tools whose right answer is known, and the check of a recipe against it.

A corpus is one JSON file, ``corpus.json`` (the builtin one ships inside the package,
so ``eval`` works from a wheel; a user's is a directory holding that file)::

    {"format": 1, "name": "mine", "items": [
      {"tool": "stern", "source": "github:stern/stern", "version": "1.32.0",
       "assets": {"linux-amd64": ["stern_1.32.0_linux_amd64.tar.gz"], ...,
                  "darwin-arm64": []}}]}

``version`` is the release the answer is for (create builds for it, so a newer release
upstream does not change the question); ``assets`` names, per standard platform, the
release assets the right recipe downloads there, an empty list where the tool has no
build. A recipe is right when it downloads exactly those on every platform listed.
The corpus hash (sha256 of the items in canonical JSON) names the questions a run
answered, so two runs are comparable only when it matches.

``eval discover`` asks only for each tool's ``source``: a create corpus is a discovery
corpus too, and a discovery corpus may leave ``version`` and ``assets`` out (the
builtin one, ``discover.json``, does: it has tools no release data is shipped for).
``eval create`` refuses a corpus whose items lack them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from tsukud.errors import TsukuError

if TYPE_CHECKING:
    from tsukud.create.preview import PlatformDownloads

FORMAT = 1
BUILTIN = "builtin"
FILE = "corpus.json"
DISCOVER_FILE = "discover.json"  # the builtin discovery corpus (a directory's: corpus.json)


class CorpusError(TsukuError):
    code = "eval_bad_corpus"


class Item(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    tool: str
    source: str  # the right source, as ``--from`` takes it: github:owner/repo, <prefix>:name, ...
    # What create's answer is checked against (None in a discovery-only corpus; left out
    # of the hash then, so a create corpus hashes as it always did).
    version: str | None = None
    assets: dict[str, list[str]] | None = None  # platform key -> asset names downloaded


class Corpus(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    format: int
    name: str
    items: list[Item]


def parse(data: bytes, where: str) -> Corpus:
    """A corpus from its JSON, or :class:`CorpusError` naming what is wrong."""
    try:
        corpus = msgspec.json.decode(data, type=Corpus)
    except msgspec.DecodeError as exc:
        raise CorpusError(f"{where} is not a corpus: {exc}") from None
    if corpus.format != FORMAT:
        raise CorpusError(f"{where}: format {corpus.format} is not {FORMAT}")
    if not corpus.items:
        raise CorpusError(f"{where} has no items")
    tools = [i.tool for i in corpus.items]
    if len(set(tools)) != len(tools):
        raise CorpusError(f"{where} names a tool twice")
    return corpus


def load(name: str, *, builtin: str = FILE) -> Corpus:
    """``builtin`` (shipped with tsukud: the file ``builtin`` names) or a directory
    holding ``corpus.json``."""
    if name == BUILTIN:
        data = resources.files("tsukud.eval").joinpath(builtin).read_bytes()
        return parse(data, "the builtin corpus")
    path = Path(name)
    if not path.is_absolute():
        raise CorpusError(f"a corpus directory must be an absolute path (got {name!r})")
    try:
        data = (path / FILE).read_bytes()
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise CorpusError(f"cannot read {path / FILE}: {reason}") from None
    return parse(data, str(path / FILE))


def for_create(corpus: Corpus, where: str) -> Corpus:
    """The corpus, if every item says what create's answer is checked against."""
    for item in corpus.items:
        if item.version is None or item.assets is None:
            raise CorpusError(
                f"{where}: {item.tool} has no version and assets: a discovery corpus "
                "cannot check a recipe (use it with eval discover)"
            )
    return corpus


def same_source(found: str, right: str) -> bool:
    """Whether a discovered ``builder:source`` is the known one: registries and GitHub
    take names in any case (``github:BurntSushi/ripgrep`` is
    ``github:burntsushi/ripgrep``)."""
    return found.strip().lower() == right.strip().lower()


def corpus_hash(corpus: Corpus) -> str:
    items = msgspec.json.encode(corpus.items, order="sorted")
    return hashlib.sha256(items).hexdigest()


def mismatches(item: Item, downloads: Sequence[PlatformDownloads]) -> list[str]:
    """Where a created recipe's downloads (``CreateResult.preview.downloads``: per
    platform its ``assets``, or ``unsupported``) differ from the known answer; empty
    when it is right."""
    got = {d.platform: list(d.assets or ()) for d in downloads}
    out = []
    for platform, want in sorted((item.assets or {}).items()):
        have = got.get(platform, [])
        if have != want:
            out.append(
                f"{platform}: {', '.join(have) or 'nothing'} (want {', '.join(want) or 'nothing'})"
            )
    return out
