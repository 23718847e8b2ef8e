"""A CPAN mirror's index (PAUSE's ``modules/02packages.details.txt.gz``) read as
data: which file below ``authors/id/`` holds each module. Both the install of a
distribution (``cpan.py``) and the gathering of what it needs (``cpan_deps.py``) read
it, so it is neither's."""

from __future__ import annotations

import re
from dataclasses import dataclass

# PAUSE's paths: an author's directory (A/AU/AUTHOR), then the file, maybe in a
# subdirectory of it; nothing that climbs out or names another host.
PAUSE_PATH = re.compile(
    r"[A-Z]/[A-Z0-9]{2}/[A-Z0-9][A-Z0-9-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.+-]*)+\.(?:tar\.gz|tgz)"
)


@dataclass(frozen=True)
class IndexEntry:
    module: str
    version: str
    path: str  # below authors/id/

    @property
    def file(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def is_pause_path(path: str) -> bool:
    """A path below ``authors/id/`` as PAUSE writes one, and nothing that climbs."""
    return PAUSE_PATH.fullmatch(path) is not None and ".." not in path


def parse_index(text: str) -> dict[str, IndexEntry]:
    """PAUSE's ``02packages.details.txt``: header lines up to the first blank line,
    then ``module version path`` per line. Lines of another shape are skipped."""
    _header, _, body = text.partition("\n\n")
    out: dict[str, IndexEntry] = {}
    for line in body.splitlines():
        parts = line.split()
        if len(parts) == 3:
            out[parts[0]] = IndexEntry(*parts)
    return out
