"""The install half of ``registry_coverage.py``: which recipes of a registry the real
installer installs, offline, against fakes serving what each recipe asks for.

Each recipe is installed once, for this host's platform, by the installer a daemon
would use (``Services.installer``, built from a ``Daemon`` over a throw-away
``TSUKU_HOME``; no socket, no client), at a stand-in version. The fake GitHub
(``tsukud/testing/github.py``) serves, for every recipe whose version comes from a
GitHub repository, a synthesized release at that version whose assets are named as
the recipe's patterns ask (``testing/asset_names.py``, the independent reader) and whose
archives hold the binaries the recipe declares (``testing/releases.py``), each a script
printing the version, so the verify command passes; the fake npm and PyPI registries
(``tests/fakes/ecosystems.py``) serve an ``npm_install``'s or ``pipx_install``'s
package at that version, its executables printing the verify pattern. Nothing else is
served: every other
endpoint is a closed loopback port and every other host is reached only through a
proxy on one, so a recipe that needs another source (a download host, a package
registry, a bottle) fails at once, and nothing leaves the machine.

The caller's PATH (what a binary must not shadow) holds no commands, so a binary named
like one of this host's (java) is not refused for it: what is counted is whether the
recipe installs, not what this machine happens to have. The toolchains (npm, python3)
are found on this process's PATH, as a daemon finds them.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import structlog
import trio

from tests.fakes.ecosystems import FakeEcosystems
from tsukud import config as configmod
from tsukud.daemon import Daemon
from tsukud.errors import TsukuError
from tsukud.net.retry import RetryPolicy
from tsukud.recipe import (
    EcosystemStep,
    Recipe,
    RecipeError,
    check_platform,
    matching_steps,
    require_supported,
    version_source,
)
from tsukud.recipe.platform import Platform
from tsukud.recipe.toml_io import dump_recipe
from tsukud.testing.github import FakeGitHub
from tsukud.testing.packages import npm_tarball, wheel
from tsukud.testing.releases import recipe_repo

STAND_IN_VERSION = "1.0.0"
CLOSED = "http://127.0.0.1:9"
# Every endpoint setting (each ``*url`` but the ledger's, which names a database),
# by the variables a daemon reads it from: none may reach the world.
OUTSIDE = tuple(
    name
    for key in configmod.KEYS.values()
    if key.name.endswith("url") and key.name != "ledger.url"
    for name in key.env
)


@dataclass
class Installs:
    """Per action: the recipes using it on the platform, and of those the ones that
    installed; why the others did not (an error code → count)."""

    platform: str = ""
    uses: Counter[str] = field(default_factory=Counter)
    installed: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)


def _actions_on(recipe: Recipe, target: Platform) -> list[str]:
    """The actions of the steps ``recipe`` selects for ``target`` (each once); none
    when it does not serve that platform."""
    try:
        check_platform(recipe, target)
    except RecipeError:
        return []
    return list(dict.fromkeys(step.action for _i, step in matching_steps(recipe, target)))


def _printed(recipe: Recipe) -> str:
    """What a synthesized command prints: the verify pattern at the stand-in version
    (so the verify passes), else the tool's name and that version."""
    pattern = recipe.verify.pattern if recipe.verify is not None else None
    if pattern:
        return pattern.replace("{version}", STAND_IN_VERSION)
    return f"{recipe.metadata.name} {STAND_IN_VERSION}"


#: The ecosystem actions the fake registries serve a package for, at the stand-in
#: version, its ``executables`` printing :func:`_printed`: an npm tarball, a wheel.
PUBLISHERS: dict[str, Callable[[FakeEcosystems, EcosystemStep, dict[str, str]], None]] = {
    "npm_install": lambda eco, s, cmds: eco.publish_npm(
        npm_tarball(s.package_name, STAND_IN_VERSION, cmds)
    ),
    "pipx_install": lambda eco, s, cmds: eco.publish_wheel(
        wheel(s.package_name, STAND_IN_VERSION, cmds)
    ),
}


def _publish(eco: FakeEcosystems, recipe: Recipe) -> None:
    """The package of each ecosystem step ``recipe`` has, on its fake registry."""
    for step in recipe.steps:
        publish = PUBLISHERS.get(step.action) if isinstance(step, EcosystemStep) else None
        if publish is not None and isinstance(step, EcosystemStep) and step.executables:
            publish(eco, step, dict.fromkeys(step.executables, _printed(recipe)))


def _serve(gh: FakeGitHub, recipe: Recipe) -> None:
    """A release of ``recipe``'s GitHub repository at the stand-in version, if its
    version comes from one (a repository two recipes share is served once)."""
    if any(isinstance(step, EcosystemStep) for step in recipe.steps):
        return
    try:
        repo = version_source(recipe).repo
    except RecipeError:
        return
    if not repo or repo.lower() in gh.repos:
        return
    try:
        gh.add_repo(recipe_repo(recipe, [STAND_IN_VERSION], repo=repo))
    except (RecipeError, ValueError, KeyError):  # no release can be made for it: it fails
        return


def measure_installs(recipes: Sequence[Recipe], target: Platform) -> Installs:
    """Install each of ``recipes`` (the host's platform must be ``target``)."""
    report = Installs(platform=str(target))
    attempted: list[tuple[Recipe, list[str]]] = []
    for recipe in recipes:
        actions = _actions_on(recipe, target)
        report.uses.update(actions)
        if not actions:
            continue
        try:
            require_supported(recipe, target)
        except RecipeError as exc:  # not attempted: it cannot install here as written
            report.failures[exc.code] += 1
            continue
        attempted.append((recipe, actions))
    with (
        FakeGitHub() as gh,
        FakeEcosystems() as eco,
        tempfile.TemporaryDirectory(prefix="tsuku-coverage-") as tmp,
    ):
        home = Path(tmp)
        (home / "recipes").mkdir()
        for recipe, _actions in attempted:
            _serve(gh, recipe)
            _publish(eco, recipe)
            name = recipe.metadata.name
            (home / "recipes" / f"{name}.toml").write_text(dump_recipe(recipe))
        env = {
            "TSUKU_HOME": str(home),
            "HOME": str(home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),  # where toolchains are
            **dict.fromkeys(OUTSIDE, CLOSED),
            **gh.env(),
            **eco.env(),
            "HTTPS_PROXY": CLOSED,
            "HTTP_PROXY": CLOSED,
            "NO_PROXY": "127.0.0.1,localhost",
        }
        daemon = Daemon(config=configmod.resolve(env=env), env=env)
        daemon.open()
        saved = structlog.get_config()  # the installer's log is not the report
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
        try:
            trio.run(_install_all, daemon, attempted, report)
        finally:
            structlog.configure(**saved)
            daemon.store.close_connection()
    return report


async def _install_all(
    daemon: Daemon, attempted: list[tuple[Recipe, list[str]]], report: Installs
) -> None:
    async with trio.open_nursery() as nursery:
        await nursery.start(daemon.store.run)
        daemon.nursery = nursery
        commandless = str(daemon.home / "no-commands")
        daemon.services.caller_path = lambda: commandless  # before the installer is built
        installer = daemon.services.installer
        # One try per request: a refused connection (the dead proxy) is not worth the
        # backoff a flaky network is, and a registry of recipes would wait minutes.
        http = daemon.services.http
        http.settings = dataclasses.replace(http.settings, retry=RetryPolicy(max_tries=1))
        for recipe, actions in attempted:
            try:
                await installer.install(recipe.metadata.name)
            except TsukuError as exc:
                report.failures[exc.code] += 1
                continue
            report.installed.update(actions)
        await daemon.services.aclose()
        daemon.store.close()
