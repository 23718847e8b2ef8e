"""What goes into the binary index: recipes on disk and the installed-tools projection.

Recipe files are read through ``tsukud.recipe`` so the commands are the ones the
installer will link (the basename of each binary's ``dest``, else its ``src``). The
names a recipe ``satisfies`` (``hx`` for helix), from the recipe or the registry's
manifest, are indexed as its claims on those commands: they are what a user types,
but a claim never displaces the recipe named after the command. A recipe
our model refuses (an action parameter it does not know yet, a newer format) still
names its commands: the raw TOML is read leniently instead, because a suggestion for a
tool we cannot install yet is still better than the shell's bare "command not found".
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tsukud.hooks.index import command_name
from tsukud.recipe import (
    EcosystemStep,
    GenericStep,
    GitHubArchiveStep,
    GitHubFileStep,
    HomebrewStep,
    Recipe,
    RecipeError,
)
from tsukud.recipe.toml_io import load_recipe


def recipe_binaries(recipe: Recipe) -> list[str]:
    """Commands a recipe installs, over all its platforms' steps, in order, once each."""
    names: list[str] = []
    for step in recipe.steps:
        if isinstance(step, GitHubArchiveStep):
            names += [command_name(b.dest or b.src) for b in step.binaries]
        elif isinstance(step, GitHubFileStep):
            if step.binary:
                names.append(command_name(step.binary))
            names += [command_name(b.dest or b.src) for b in step.binaries or ()]
        elif isinstance(step, EcosystemStep):
            names += [command_name(e) for e in step.executables]
        elif isinstance(step, GenericStep):
            names += _loose_binaries(step.params)
        elif isinstance(step, HomebrewStep):  # binaries some registry recipes put here
            names += _loose_binaries(step.extra)
    names += [command_name(b) for b in recipe.metadata.binaries or ()]
    return list(dict.fromkeys(n for n in names if n))


def aliases(names: Iterable[str]) -> list[str]:
    """The names a tool ``satisfies``, as the index keeps them: lower case, once each.
    They are claims, kept apart from its binaries: the index drops one that another
    recipe provides under its own name (``index.plan_index``)."""
    return list(dict.fromkeys(a.lower() for a in names if a))


def _satisfied(satisfies: Any) -> list[str]:
    """Every name in a ``satisfies`` table (``{aliases = ["hx"]}``), read loosely."""
    if not isinstance(satisfies, Mapping):
        return []
    names = (n for v in satisfies.values() if isinstance(v, list | tuple) for n in v)
    return [n for n in names if isinstance(n, str)]


def _loose_binaries(table: Mapping[str, Any]) -> list[str]:
    """``binaries`` (paths or ``{src, dest}``), ``binary`` and an ecosystem step's
    ``executables`` from an untyped table."""
    out: list[str] = []
    execs = table.get("executables")
    out += [command_name(e) for e in execs if isinstance(e, str)] if isinstance(execs, list) else []
    raw = table.get("binaries")
    for item in raw if isinstance(raw, list) else ():
        if isinstance(item, str):
            out.append(command_name(item))
        elif isinstance(item, dict):
            path = item.get("dest") or item.get("src")
            if isinstance(path, str):
                out.append(command_name(path))
    if isinstance(table.get("binary"), str):
        out.append(command_name(table["binary"]))
    return out


Commands = tuple[list[str], list[str]]  # (binaries, aliases it satisfies)


def _lenient_binaries(path: Path) -> Commands | None:
    """Commands from a recipe the typed model refused; None when it is not even TOML."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    names: list[str] = []
    claimed: list[str] = []
    steps = data.get("steps")
    for step in steps if isinstance(steps, list) else ():
        if isinstance(step, dict):
            names += _loose_binaries(step)
    meta = data.get("metadata")
    if isinstance(meta, dict):
        names += _loose_binaries(meta)
        claimed = aliases(_satisfied(meta.get("satisfies")))
    return list(dict.fromkeys(n for n in names if n)), claimed


class RecipeReader:
    """Reads recipe files, remembering each by (mtime, size) so a rebuild after one
    install does not re-parse every cached recipe."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[tuple[int, int], Commands | None]] = {}
        self.errors: dict[str, str] = {}

    def commands(self, path: Path) -> Commands | None:
        """The recipe's binaries (maybe none: index it under its name) and the names it
        satisfies; None if unreadable."""
        try:
            st = path.stat()
        except OSError:
            return None
        key = (st.st_mtime_ns, st.st_size)
        hit = self._cache.get(str(path))
        if hit is not None and hit[0] == key:
            return hit[1]
        found: Commands | None
        try:
            recipe = load_recipe(path)
            found = recipe_binaries(recipe), aliases(_satisfied(recipe.metadata.satisfies))
            self.errors.pop(str(path), None)
        except (RecipeError, OSError) as exc:
            found = _lenient_binaries(path)
            self.errors[str(path)] = str(exc)
        self._cache[str(path)] = (key, found)
        return found

    def scan(self, home: Path) -> list[tuple[str, str, list[str], list[str]]]:
        """``(tool, source, binaries, aliases)`` for local recipes, cached registry
        recipes, and the names in the cached registry manifest (indexed under their own
        name, with the aliases the manifest lists)."""
        seen_paths: set[str] = set()
        out: list[tuple[str, str, list[str], list[str]]] = []
        for source, files in (
            ("local", _toml_files(home / "recipes", recursive=False)),
            ("registry", _toml_files(home / "registry", recursive=True)),
        ):
            for path in files:
                seen_paths.add(str(path))
                found = self.commands(path)
                if found is not None:
                    out.append((path.stem.lower(), source, found[0], found[1]))
        registry = {tool: i for i, (tool, source, _, _) in enumerate(out) if source == "registry"}
        for name, claimed in manifest_entries(home / "registry" / "manifest.json").items():
            if name in registry:
                tool, source, names, own = out[registry[name]]
                out[registry[name]] = (tool, source, names, aliases([*own, *claimed]))
            else:
                out.append((name, "registry", [], aliases(claimed)))
        for stale in set(self._cache) - seen_paths:
            del self._cache[stale]
            self.errors.pop(stale, None)
        return out


def _toml_files(root: Path, *, recursive: bool) -> list[Path]:
    """Sorted ``*.toml`` under ``root``; hidden files (writers' temp files) skipped."""
    if not root.is_dir():
        return []
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")) if recursive else []
        found += [
            Path(dirpath, f) for f in filenames if f.endswith(".toml") and not f.startswith(".")
        ]
    return sorted(found)


def manifest_names(path: Path) -> list[str]:
    """Recipe names listed by the cached registry manifest (``{recipes: [{name}]}``)."""
    return sorted(manifest_entries(path))


def manifest_entries(path: Path) -> dict[str, list[str]]:
    """Recipe name → the names it satisfies, from the cached registry manifest.

    The registry caches a recipe file only once something asked for it, so without the
    manifest a fresh install would know nothing to suggest. Read loosely: a manifest we
    cannot read adds nothing rather than failing the whole index.
    """
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    recipes = data.get("recipes") if isinstance(data, dict) else None
    out: dict[str, list[str]] = {}
    for r in recipes if isinstance(recipes, list) else ():
        name = r.get("name") if isinstance(r, dict) else None
        if isinstance(name, str) and name:
            out.setdefault(name.lower(), []).extend(_satisfied(r.get("satisfies")))
    return out


def installed_binaries(installed: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """Tool → commands from ``install.completed`` payloads (``binaries`` is a mapping of
    link name → {path, sha256}; a list of paths is accepted too)."""
    out: dict[str, list[str]] = {}
    for tool, rec in installed.items():
        if rec.get("hidden"):  # not linked into bin/: its commands are not the user's
            continue
        raw = rec.get("binaries")
        names: Iterable[Any] = raw.keys() if isinstance(raw, Mapping) else raw or ()
        out[tool] = [command_name(n) for n in names if isinstance(n, str)]
    return out
