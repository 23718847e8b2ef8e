"""The ecosystem actions tsuku knows: one entry per record of registries/ecosystems.py.

Each entry names the toolchain it needs, the version source its package's versions
come from (``install/ecosystem/versions.py``), the setting holding that registry's base
URL (the same settings discovery's probes read, so one ``TSUKU_<NAME>_URL`` points both at
a mirror) and its runner. A runner installs one pinned version into the tool's
directory and returns the executables to link (``{name: {path, sha256}}``); an entry
without a runner parses, plans and resolves versions, but does not install yet.

The runner module holds everything that ecosystem's package manager and packages need
beyond the registry's reader: ``install`` (the runner), ``draft`` (the step for a
package, from its registry's metadata: ``create --from``'s drafter) and ``fetch`` (the
package fetched with its scripts off, for validation in the container). The record
names the module (the core cannot import a feature); it is imported here, by that
name, the first time the table is built, and create and validation dispatch through
this table, never by an ecosystem's name.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, cast

from tsukud.install.ecosystem.drafting import Drafter
from tsukud.install.ecosystem.prefix import RunContext
from tsukud.install.ecosystem.staging import Build, Stage
from tsukud.recipe import EcosystemStep, PipExecStep, UnsupportedAction
from tsukud.registries.ecosystems import ECOSYSTEMS, Ecosystem, Toolchain

if TYPE_CHECKING:
    from tsukud.net.http import Http

Runner = Callable[[RunContext], Awaitable[dict[str, dict[str, str]]]]
#: ``fetch(ctx, stage, http)``: the package fetched for validation, scripts off.
Fetch = Callable[[RunContext, Stage, "Http"], Awaitable[Build]]


@dataclass(frozen=True)
class EcosystemAction:
    action: str
    toolchain: Toolchain
    version_source: str
    url_setting: str
    runner: Runner | None = None
    index_setting: str | None = None  # a second URL the runner needs (an index)
    drafter: Drafter | None = None
    fetch: Fetch | None = None


def _action(e: Ecosystem) -> EcosystemAction:
    module: ModuleType | None = None if e.runner is None else importlib.import_module(e.runner)
    return EcosystemAction(
        e.action,
        e.toolchain,
        e.version_source,
        e.registry.key,
        None if module is None else cast(Runner, module.install),
        index_setting=e.index.key if e.index else None,
        drafter=None if module is None else cast(Drafter, module.draft),
        fetch=None if module is None else cast(Fetch, module.fetch),
    )


ACTIONS: dict[str, EcosystemAction] = {e.action: _action(e) for e in ECOSYSTEMS}


def _primitive(e: Ecosystem) -> EcosystemAction | None:
    """The entry of ``e``'s plan primitive written as a step itself (``pip_exec``),
    when its runner module installs one (``install_locked``)."""
    module = None if e.runner is None else importlib.import_module(e.runner)
    locked = getattr(module, "install_locked", None)
    if locked is None:
        return None
    return dataclasses.replace(ACTIONS[e.action], action=e.plan_action, runner=locked)


#: tsuku's ecosystem primitives a recipe may write as steps, by action.
PRIMITIVES: dict[str, EcosystemAction] = {
    p.action: p for p in (_primitive(e) for e in ECOSYSTEMS) if p is not None
}


def action_for(step: EcosystemStep | PipExecStep) -> EcosystemAction:
    """The step's entry; ``recipe.require_supported`` already refused an action without
    a runner (``RUNNABLE_ECOSYSTEM_ACTIONS`` lists the ones with one)."""
    entry = PRIMITIVES[step.action] if isinstance(step, PipExecStep) else ACTIONS[step.action]
    if entry.runner is None:
        raise UnsupportedAction(f"{step.action} is not supported yet", action=step.action)
    return entry


def registry_urls(setting: Callable[[str], str]) -> dict[str, str]:
    """Version source → base URL, read through ``setting`` (a config lookup), and
    ``<source>.index`` → the index URL of an action that has one."""
    urls = {a.version_source: setting(a.url_setting) for a in ACTIONS.values()}
    for a in ACTIONS.values():
        if a.index_setting is not None:
            urls[index_key(a.version_source)] = setting(a.index_setting)
    return urls


def index_key(version_source: str) -> str:
    return f"{version_source}.index"
