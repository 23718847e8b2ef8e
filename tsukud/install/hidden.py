"""A hidden toolchain's life: installed for a tool, removed with the last one using it,
the user's own once asked for by name.

tsuku installs an ecosystem action's toolchain implicitly (hidden: nothing linked into
``bin/``), removes such an implicit dependency when the last tool that required it is
removed, and never one the user installed explicitly (its ``IsExplicit``, ``RequiredBy``);
installing it by name marks it explicit. Here a record's ``hidden`` is that implicit
mark: ``tsukuctl install nodejs`` installs it again without the mark (linked, judged
as any install), so from then on it is the user's and stays when its users go. A
record's ``toolchains`` (the toolchains its install ran its package manager with) and
:func:`~tsukud.install.homebrew.deps.needs` (what it runs on or was built against) say
who uses one.

Pure: plain functions over the installed-tools projection; ``installer.py`` removes
what :func:`orphaned` names (each if :func:`unused_hidden` still), ``attempt.py`` calls
:func:`refuse_replacing`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tsukud.install.homebrew.deps import needs, replaced_in_use
from tsukud.install.homebrew.errors import DependencyInUse

Installed = Mapping[str, Mapping[str, Any]]


def uses(record: Mapping[str, Any]) -> list[str]:
    """What an installed tool uses of other installed tools: what it needs kept
    (runtime, built against: ``needs``), then the toolchains its install ran with
    (``rust`` for a cargo tool: needed again only to reinstall or upgrade it)."""
    return list(dict.fromkeys([*needs(record), *(record.get("toolchains") or ())]))


def users(installed: Installed, name: str) -> list[str]:
    """The installed tools (other than ``name``) that use ``name`` (:func:`uses`),
    sorted: a hidden toolchain is ``list``'s ``(toolchain for <users>)``."""
    return sorted(tool for tool, rec in installed.items() if tool != name and name in uses(rec))


def unused_hidden(installed: Installed, name: str) -> bool:
    """Whether ``name`` is installed hidden (never asked for by name) and used by no
    installed tool: what a ``remove`` may take with it. Asked once per toolchain when a
    remove plans, and again under its lock right before it goes."""
    record = installed.get(name)
    return record is not None and bool(record.get("hidden")) and not users(installed, name)


def orphaned(installed: Installed, removed: str) -> list[tuple[str, str]]:
    """The hidden toolchains that removing ``removed`` leaves used by no installed tool,
    each with the tool it was there for, in the order they go: ``removed``'s own, then
    theirs (a toolchain's own hidden toolchain), each once. A tool the user installed by
    name (no ``hidden`` mark) is never among them, nor one another tool still uses; one
    ``removed`` never used is none of its business (an unrelated ``remove`` touches no
    toolchain)."""
    left = {tool: rec for tool, rec in installed.items() if tool != removed}
    record = installed.get(removed)
    if record is None:
        return []
    out: list[tuple[str, str]] = []
    frontier: list[tuple[str, Mapping[str, Any]]] = [(removed, record)]
    while frontier:
        tool, rec = frontier.pop(0)
        for dep in uses(rec):
            if not unused_hidden(left, dep):
                continue
            out.append((dep, tool))
            frontier.append((dep, left.pop(dep)))
    return out


def refuse_replacing(installed: Installed, name: str, version: str, *, by_name: bool) -> None:
    """:class:`DependencyInUse` when installing another version of a hidden toolchain
    would delete the one tools run on (their wrappers name its versioned directory,
    ``tools/nodejs-22.1.0/bin``, which the new version's install deletes): asked for by
    name (``by_name``: ``install nodejs``) or upgraded (``upgrade nodejs``, ``upgrade
    --all``, which keep it hidden).

    Refused rather than keeping the old version for them: the ledger keeps one
    record, one active version, per tool name, and a second copy kept aside would be a
    tool no ``list``, ``remove`` or ``upgrade`` could name. The refusal leaves nothing
    broken and says the ways on in the toolchain's own words (not the wording of a
    library dependency's refusal, ``deps.refuse_version_change``): by name, the version
    they run on made the user's (``install nodejs@<installed>``); either way, the newer
    one for the tools by removing them (the hidden toolchain goes with them) and
    installing them again. The same version is installed again as always."""
    in_use = replaced_in_use(installed, name, version)
    if in_use is None or not in_use[0].get("hidden"):
        return
    current, on_it = in_use
    old = current.get("version")
    who = ", ".join(on_it)
    one = len(on_it) == 1
    runs, them = ("runs", "it") if one else ("run", "them")
    again = (
        f"`tsukuctl remove {' '.join(on_it)}` (removes the hidden {name} with {them}), "
        f"then `tsukuctl install {' '.join(on_it)}`: {'it runs' if one else 'they run'} on "
        f"the newest {name}, installed for {them} again"
    )
    if by_name:
        message = (
            f"{name} {old} is installed as the toolchain {who} {runs} on "
            f"({current.get('install_dir')}); installing {name} {version} would delete it"
        )
        hint = (
            f"Run `tsukuctl install {name}@{old}` to put the {name} {who} {runs} on on your "
            f"PATH (yours from then on: kept when {who} {'is' if one else 'are'} removed). For "
            f"{name} {version} as well: {again}, and `tsukuctl install {name}`."
        )
    else:
        message = (
            f"{name} {old} is the hidden toolchain {who} {runs} on: {'its' if one else 'their'} "
            f"commands run {name}'s programs from {current.get('install_dir')}, which "
            f"upgrading {name} to {version} would delete"
        )
        hint = (
            f"To move {who} to {name} {version}: {again}. Until then {name} {old} stays "
            f"and {who} {'keeps' if one else 'keep'} working."
        )
    raise DependencyInUse(
        message, hint=hint, tool=name, needed_by=on_it, version=old, requested=version
    )
