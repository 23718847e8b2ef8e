"""Which installed tools have a newer release, and moving them to it.

``outdated`` asks, for each installed tool, the recipe (registry or local) and the
version resolver for the newest release; the resolver caches each answer (and the HTTP
layer below it revalidates with ETags), so asking again within minutes costs no GitHub
quota. A tool whose recipe or release cannot be read is reported with its error rather
than failing the whole list: one unreachable repository must not hide the others.

A tool whose recipe has no version source (a page's fixed URLs: ``pinned``) has no
newer release to find; both say so rather than calling it current. A generated recipe
installs only the release it was validated at (``pins.py``): a newer release is shown
(``needs_validation``, with the command that validates and pins it) and ``upgrade``
refuses it without downloading anything. The newest release is found by the resolver's
one rule, the one ``create`` validates with, so a tool just created is current.

``upgrade`` installs the newest release of each outdated tool through the installer,
so an upgrade is an install like any other: its own session and ``install.*`` events,
and the old version stays installed and linked until the new one has been verified
(``attempt.py``). One tool's failure does not stop the others; the result says which
moved, which were current and which failed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec
from msgspec import UNSET, UnsetType

from tsukud.errors import TsukuError, UsageError
from tsukud.install.errors import VersionNotValidated, not_installed
from tsukud.install.homebrew.deps import replaced_in_use
from tsukud.install.pins import require_validated, validated_version
from tsukud.install.registry import check_name
from tsukud.install.results import Current, NotUpgraded, Upgraded, Upgrades
from tsukud.recipe.version_range import compare_versions

if TYPE_CHECKING:
    from tsukud.install.installer import Installer
    from tsukud.progress import Progress


class ToolStatus(msgspec.Struct, frozen=True, kw_only=True):
    """One installed tool against its newest release (``newest`` is None when it could
    not be found out; ``error`` then says why)."""

    tool: str
    installed: str
    newest: str | None = None
    outdated: bool = False
    error: str | None = None
    error_code: str | None = None
    # The recipe has no version source (its URLs name one version, e.g. read from an
    # install page): ``newest`` is that version, not a release anyone looked up.
    pinned: bool = False
    # A generated recipe: the one version it was validated and pinned at (pins.py).
    validated: str | None = None
    # ``newest`` is newer but was never validated: upgrade refuses it, ``hint`` says how
    # to validate and pin it.
    needs_validation: bool = False
    hint: str | None = None


def compare(tool: str, installed: str, newest: str) -> ToolStatus:
    """The pure part: newer only when the newest release sorts above the installed one
    (a pinned older install is outdated; a locally built newer one is not)."""
    return ToolStatus(
        tool=tool,
        installed=installed,
        newest=newest,
        outdated=compare_versions(newest.removeprefix("v"), installed.removeprefix("v")) > 0,
    )


def chosen(inst: Installer, names: list[str]) -> dict[str, str]:
    """Installed tool → its version: all of them, or the named ones (each must be
    installed)."""
    installed = {name: str(rec.get("version") or "") for name, rec in inst.installed().items()}
    if not names:
        return dict(sorted(installed.items()))
    picked = {}
    for raw in names:
        name = check_name(raw)
        if name not in installed:
            raise not_installed(name, installed)
        picked[name] = installed[name]
    return picked


async def newest_status(inst: Installer, tool: str, installed: str) -> ToolStatus:
    try:
        loaded = await inst.registry.load(tool)
        res = await inst.resolver.resolve(loaded.recipe, None)
    except TsukuError as exc:
        return ToolStatus(tool=tool, installed=installed, error=exc.message, error_code=exc.code)
    status = compare(tool, installed, res.version)
    if res.how == "pinned":
        status = msgspec.structs.replace(status, pinned=True)
    validated = validated_version(loaded.recipe)
    if validated is None:
        return status
    status = msgspec.structs.replace(status, validated=validated)
    try:
        require_validated(loaded.recipe, res.version)
    except VersionNotValidated as exc:
        if status.outdated:
            return msgspec.structs.replace(status, needs_validation=True, hint=exc.hint)
    return status


async def outdated(inst: Installer, names: list[str]) -> list[ToolStatus]:
    return [
        await newest_status(inst, tool, version) for tool, version in chosen(inst, names).items()
    ]


def _runs_on_it(inst: Installer, status: ToolStatus) -> list[str]:
    """The tools that run on ``status.tool`` when it is a hidden toolchain its newest
    release would replace under them; empty otherwise."""
    installed = inst.installed()
    in_use = replaced_in_use(installed, status.tool, status.newest or status.installed)
    if in_use is None or not in_use[0].get("hidden"):
        return []
    return in_use[1]


async def upgrade(
    inst: Installer, names: list[str], *, every: bool, progress: Progress
) -> Upgrades:
    if not names and not every:
        raise UsageError(
            "name the tools to upgrade, or upgrade them all",
            hint="`tsukuctl upgrade age kind`, or `tsukuctl upgrade --all`.",
        )
    upgraded: list[Upgraded] = []
    current: list[Current] = []
    failed: list[NotUpgraded] = []
    for status in await outdated(inst, [] if every else names):
        if status.error is not None:
            failed.append(
                NotUpgraded(tool=status.tool, error_code=status.error_code, message=status.error)
            )
        elif status.needs_validation:
            failed.append(
                NotUpgraded(
                    tool=status.tool,
                    error_code=VersionNotValidated.code,
                    message=f"{status.newest} was never validated: its recipe was generated, "
                    f"validated and pinned at {status.validated}",
                    hint=status.hint or UNSET,
                )
            )
        elif not status.outdated:
            current.append(
                Current(tool=status.tool, version=status.installed, pinned=status.pinned or UNSET)
            )
        elif every and (kept_for := _runs_on_it(inst, status)):
            # ``--all`` keeps a hidden toolchain tools run on (named, it is refused with
            # the ways on): its newer release would delete the one they run on, and a
            # command run every week should not fail each time a toolchain releases.
            current.append(Current(tool=status.tool, version=status.installed, kept_for=kept_for))
        else:
            try:
                # A hidden toolchain stays hidden: upgraded, not linked into bin/.
                hidden = bool((inst.installed().get(status.tool) or {}).get("hidden"))
                done = await inst.install(status.tool, None, progress=progress, hidden=hidden)
            except TsukuError as exc:
                failed.append(
                    NotUpgraded(
                        tool=status.tool, error_code=exc.code, message=exc.message, hint=exc.hint
                    )
                )
                continue
            session = None if isinstance(done.session, UnsetType) else done.session
            upgraded.append(
                Upgraded(tool=status.tool, from_=status.installed, to=done.version, session=session)
            )
    return Upgrades(upgraded=upgraded, current=current, failed=failed)
