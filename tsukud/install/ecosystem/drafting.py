"""What a runner module's ``draft`` answers: the step that installs a package, from its
registry's metadata, and the words a refusal needs.

Each ecosystem's drafter lives in its runner module (``install/ecosystem/<tool>.py``),
beside the command it drafts for: it knows which documents list the package's
versions and where its executables are written down. ``create/ecosystem_builders.py``
dispatches to it through the record and turns :class:`Drafted` into a recipe, and
:class:`NotDrafted` into create's error (this layer is below create and cannot raise
it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tsukud.install.ecosystem.versions import choose
from tsukud.recipe.model import EcosystemStep, VersionSection
from tsukud.recipe.version import ResolvedVersion, check_version
from tsukud.registries.ecosystems import Ecosystem

if TYPE_CHECKING:
    from tsukud.net.http import Http

PACKAGE_MAX_BYTES = 64 * 1024 * 1024  # a wheel, .crate, .gem or module zip read for metadata
_JSON = {"accept": "application/json"}

#: ``draft(http, registry URL, package, requested version)``
Drafter = Callable[["Http", str, str, "str | None"], Awaitable["Drafted"]]


@dataclass(frozen=True)
class Drafted:
    """The step for a package at the version drafted, and what the registry says of it."""

    step: EcosystemStep
    resolved: ResolvedVersion
    description: Any = None
    homepage: Any = None
    version: VersionSection | None = None  # a ``[version]`` the installer could not infer


class NotDrafted(Exception):
    """No recipe can be drafted: the package is missing, a library, or unreadable.
    ``status`` is what the registry answered, when that is the reason (404, 410)."""

    def __init__(self, message: str, hint: str | None = None, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.status = status


def no_executables(label: str, what: str) -> NotDrafted:
    return NotDrafted(
        f"{label} declares no {what}", hint="It is a library, not a tool; nothing was written."
    )


async def document(http: Http, url: str, label: str, base: str) -> Any:
    """A registry's JSON document; :class:`NotDrafted` when there is no such package."""
    from tsukud.net.http import HttpStatusError

    try:
        return (await http.get(url, headers=_JSON, cache=True)).json()
    except HttpStatusError as exc:
        if exc.status not in (404, 410):
            raise
        status = exc.status
    raise NotDrafted(
        f"{label} does not exist at {base}",
        hint="Check the name (and the registry URL setting); nothing was written.",
        status=status,  # what the registry said: a batch tells "no such package" by it
    )


async def listed(
    http: Http, base: str, label: str, eco: Ecosystem, package: str, requested: str | None
) -> tuple[Any, ResolvedVersion]:
    """The JSON document of ``eco``'s registry that lists ``package``'s versions (the
    record's ``versions``), and the version to draft (``requested``, else the
    registry's latest)."""
    source = eco.versions
    assert source is not None, eco.builder  # a registry whose versions are one document
    doc = await document(http, source.url(base, package), label, base)
    return doc, check_version(choose((source.versions(doc), source.latest(doc)), requested, label))


async def json_document(http: Http, url: str) -> Any:
    """A JSON document whose absence is the client's error, not a refusal."""
    return (await http.get(url, headers=_JSON, cache=True)).json()


async def package_bytes(http: Http, url: str) -> bytes:
    return (await http.get(url, max_bytes=PACKAGE_MAX_BYTES)).body
