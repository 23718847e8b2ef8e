"""Deterministic recipe builders for ecosystem packages: ``--from npm:<package>`` and
``--from pypi:<project>``.

The registry's metadata says everything a recipe needs, so no model is asked and
nothing is guessed: the executables are the ``bin`` of the version's npm manifest, or
the console scripts in the wheel's ``entry_points.txt`` (PyPI's APIs do not list them;
the wheel is read, never installed, here). The recipe is tsuku's registry style: one
ecosystem step, no ``[version]`` (versions come from the registry), and ``<first
executable> --version`` expected to print the version. ``host_validation`` then proves
it by installing it.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tsukud.create.context import clean_description
from tsukud.create.errors import BadSource, CreateError
from tsukud.install.ecosystem.versions import choose
from tsukud.recipe import Metadata, Recipe, Verify, dump_recipe
from tsukud.recipe.model import EcosystemStep, NpmInstallStep, PipxInstallStep
from tsukud.recipe.version import check_version
from tsukud.registries import npm, pypi

if TYPE_CHECKING:
    from tsukud.net.http import Http

# --from prefix -> the version source (and registry) it names
SOURCES = {"npm": "npm", "pypi": "pypi"}
# Recognised, not built yet: a clear refusal instead of "owner/repo expected".
NOT_YET = {"crates": "cargo_install", "rubygems": "gem_install", "go": "go_install"}
WHEEL_MAX_BYTES = 64 * 1024 * 1024
_JSON = {"accept": "application/json"}


@dataclass(frozen=True)
class EcosystemSource:
    prefix: str  # npm | pypi
    package: str

    @property
    def version_source(self) -> str:
        return SOURCES[self.prefix]

    def __str__(self) -> str:
        return f"{self.prefix}:{self.package}"


def parse_ecosystem_source(source: str) -> EcosystemSource | None:
    """``npm:<package>`` / ``pypi:<project>``; None for anything else (a GitHub
    source); :class:`BadSource` for a registry prefix with a name it cannot have."""
    kind, sep, rest = source.strip().partition(":")
    kind, rest = kind.lower(), rest.strip()
    if not sep or (kind not in SOURCES and kind not in NOT_YET):
        return None
    if kind in NOT_YET:
        raise BadSource(
            f"--from {kind}: is not supported yet ({NOT_YET[kind]} has no builder)",
            hint="Use --from npm:<package>, --from pypi:<project> or --from github:owner/repo.",
        )
    valid = npm.valid_name if kind == "npm" else pypi.valid_name
    if not valid(rest):
        what = "an npm package name" if kind == "npm" else "a PyPI project name"
        raise BadSource(f"expected {kind}:<{what}>, got {source!r}")
    return EcosystemSource(kind, rest)


@dataclass(frozen=True)
class Draft:
    """A recipe from a registry, at the version it was drafted for."""

    recipe: Recipe
    step: EcosystemStep
    version: str
    tag: str  # the registry's spelling (what the runner pins)
    text: str


def _recipe(tool: str, step: EcosystemStep, description: Any, homepage: Any) -> tuple[Recipe, str]:
    home = homepage if isinstance(homepage, str) and homepage.startswith("https://") else None
    recipe = Recipe(
        metadata=Metadata(
            name=tool, description=clean_description(_text(description)), homepage=home
        ),
        steps=(step,),
        verify=Verify(command=f"{step.executables[0]} --version", pattern="{version}"),
    )
    return recipe, dump_recipe(recipe)


async def _document(http: Http, url: str, label: str, base: str) -> Any:
    from tsukud.net.http import HttpStatusError

    try:
        return (await http.get(url, headers=_JSON, cache=True)).json()
    except HttpStatusError as exc:
        if exc.status not in (404, 410):
            raise
    raise CreateError(
        f"{label} does not exist at {base}",
        hint="Check the name (and the registry URL setting); nothing was written.",
    )


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


async def draft_npm(http: Http, base: str, tool: str, package: str, requested: str | None) -> Draft:
    doc = (await http.get(npm.packument_url(base, package), headers=_JSON, cache=True)).json()
    label = f"npm package {package}"
    resolved = check_version(choose((npm.versions(doc), npm.latest(doc)), requested, label))
    manifest = npm.manifest(doc, resolved.tag)
    executables = npm.executables(manifest, package)
    if not executables:
        raise CreateError(
            f"{label} {resolved.tag} declares no command (no bin in its package.json)",
            hint="It is a library, not a tool; nothing was written.",
        )
    step = NpmInstallStep(package=package, executables=tuple(executables))
    recipe, text = _recipe(
        tool,
        step,
        manifest.get("description") or doc.get("description"),
        manifest.get("homepage") or doc.get("homepage"),
    )
    return Draft(recipe, step, resolved.version, resolved.tag, text)


async def draft_pypi(
    http: Http, base: str, tool: str, project: str, requested: str | None
) -> Draft:
    label = f"pypi package {project}"
    doc = await _document(http, pypi.project_url(base, project), label, base)
    resolved = check_version(choose((pypi.versions(doc), pypi.latest(doc)), requested, label))
    if resolved.tag != pypi.latest(doc):
        url = f"{base.rstrip('/')}/pypi/{pypi.normalize(project)}/{resolved.tag}/json"
        release = await _document(http, url, f"{label} {resolved.tag}", base)
    else:
        release = doc
    wheels = pypi.wheels(release)
    if not wheels:
        raise CreateError(
            f"{label} {resolved.tag} has no wheel: its console scripts cannot be read "
            "without building it",
            hint="Write the recipe by hand (pipx_install with its executables).",
        )
    data = (await http.get(wheels[0]["url"], max_bytes=WHEEL_MAX_BYTES)).body
    scripts = _wheel_scripts(data)
    if not scripts:
        raise CreateError(
            f"{label} {resolved.tag} declares no console script",
            hint="It is a library, not a tool; nothing was written.",
        )
    step = PipxInstallStep(package=project, executables=tuple(scripts))
    info = _dict(release.get("info"))
    urls = _dict(info.get("project_urls"))
    homepage = info.get("home_page") or urls.get("Homepage") or urls.get("Source")
    recipe, text = _recipe(tool, step, info.get("summary"), homepage)
    return Draft(recipe, step, resolved.version, resolved.tag, text)


def _wheel_scripts(data: bytes) -> list[str]:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as whl:
            names = [n for n in whl.namelist() if n.endswith(".dist-info/entry_points.txt")]
            if len(names) != 1 or names[0].count("/") != 1:
                return []
            text = whl.read(names[0]).decode("utf-8", "replace")
    except (zipfile.BadZipFile, OSError):
        raise CreateError("the wheel is not a readable zip file") from None
    return pypi.console_scripts(text)


DRAFTERS = {"npm": draft_npm, "pypi": draft_pypi}
