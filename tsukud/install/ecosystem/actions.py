"""The ecosystem actions tsuku knows: one entry per record of registries/ecosystems.py.

Each entry names the toolchain it needs, the version source its package's versions
come from (``install/ecosystem/versions.py``), the setting holding that registry's base
URL (the same settings discovery's probes read, so one ``TSUKU_NPM_URL`` points both at
a mirror) and its runner. A runner installs one pinned version into the tool's
directory and returns the executables to link (``{name: {path, sha256}}``); an entry
without a runner parses, plans and resolves versions, but does not install yet.

The record names its runner module (the core cannot import a feature); the module is
imported here, by that name, the first time the table is built.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import cast

from tsukud.install.ecosystem.prefix import RunContext
from tsukud.recipe import EcosystemStep, UnsupportedAction
from tsukud.registries.ecosystems import ECOSYSTEMS, Ecosystem, Toolchain

Runner = Callable[[RunContext], Awaitable[dict[str, dict[str, str]]]]


@dataclass(frozen=True)
class EcosystemAction:
    action: str
    toolchain: Toolchain
    version_source: str
    url_setting: str
    runner: Runner | None = None
    index_setting: str | None = None  # a second URL the runner needs (cargo's index)


def _runner(module: str | None) -> Runner | None:
    return None if module is None else cast(Runner, importlib.import_module(module).install)


def _action(e: Ecosystem) -> EcosystemAction:
    return EcosystemAction(
        e.action,
        e.toolchain,
        e.version_source,
        e.registry.key,
        _runner(e.runner),
        index_setting=e.index.key if e.index else None,
    )


ACTIONS: dict[str, EcosystemAction] = {e.action: _action(e) for e in ECOSYSTEMS}


def action_for(step: EcosystemStep) -> EcosystemAction:
    """The step's entry; ``recipe.require_supported`` already refused an action without
    a runner (``RUNNABLE_ECOSYSTEM_ACTIONS`` lists the ones with one)."""
    entry = ACTIONS[step.action]
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
