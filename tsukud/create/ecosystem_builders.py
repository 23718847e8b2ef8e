"""Deterministic recipe builders for ecosystem packages: ``--from npm:<package>``,
``pypi:<project>``, ``crates:<crate>``, ``rubygems:<gem>`` and ``go:<module>``.

The registry's metadata says everything a recipe needs, so no model is asked and
nothing is guessed: the executables are the ``bin`` of the version's npm manifest, or
the console scripts in the wheel's ``entry_points.txt`` (PyPI's APIs do not list them;
the wheel is read, never installed, here); a crate's ``bin_names`` from crates.io, or
its Cargo.toml's ``[[bin]]`` targets and cargo's auto-discovered ones when crates.io
does not know them; a gem's ``executables`` from the ``.gem``'s spec (no RubyGems API
lists them); for Go, the module's root must be a main package, and its binary is the
module path's last element (a ``/vN`` suffix skipped), as ``go install`` names it.
The recipe is tsuku's registry style: one ecosystem step, no ``[version]`` (versions
come from the registry), and ``<first executable> --version`` expected to print the
version. ``ecosystem_validation`` then proves it: the package is fetched on the host with
its scripts off and installed and verified in the validation container.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tsukud.create.context import clean_description
from tsukud.create.errors import CreateError
from tsukud.errors import TsukuError
from tsukud.install.ecosystem.versions import choose
from tsukud.recipe import Metadata, Recipe, Verify, dump_recipe, host_platform
from tsukud.recipe.model import (
    CargoInstallStep,
    EcosystemStep,
    GemInstallStep,
    GoInstallStep,
    NpmInstallStep,
    PipxInstallStep,
    VersionSection,
)
from tsukud.recipe.version import ResolvedVersion, check_version
from tsukud.registries import crates, goproxy, npm, pypi, rubygems

if TYPE_CHECKING:
    from tsukud.net.http import Http

WHEEL_MAX_BYTES = 64 * 1024 * 1024
PACKAGE_MAX_BYTES = 64 * 1024 * 1024  # a .crate, .gem or module zip read for its metadata
_JSON = {"accept": "application/json"}


@dataclass(frozen=True)
class Draft:
    """A recipe from a registry, at the version it was drafted for."""

    recipe: Recipe
    step: EcosystemStep
    version: str
    tag: str  # the registry's spelling (what the runner pins)
    text: str


def _recipe(
    tool: str,
    step: EcosystemStep,
    description: Any,
    homepage: Any,
    version: VersionSection | None = None,
) -> tuple[Recipe, str]:
    home = homepage if isinstance(homepage, str) and homepage.startswith("https://") else None
    recipe = Recipe(
        metadata=Metadata(
            name=tool, description=clean_description(_text(description)), homepage=home
        ),
        version=version,
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
        status = exc.status
    raise CreateError(
        f"{label} does not exist at {base}",
        hint="Check the name (and the registry URL setting); nothing was written.",
        status=status,  # what the registry said: a batch tells "no such package" by it
    )


async def _listed(
    http: Http,
    base: str,
    label: str,
    url: str,
    listing: Callable[[Any], tuple[list[str], str | None]],
    requested: str | None,
) -> tuple[Any, ResolvedVersion]:
    """A registry's JSON document that lists the versions, and the version to draft
    (``requested``, else the registry's latest)."""
    doc = await _document(http, url, label, base)
    return doc, check_version(choose(listing(doc), requested, label))


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
    doc, resolved = await _listed(
        http,
        base,
        label,
        pypi.project_url(base, project),
        lambda d: (pypi.versions(d), pypi.latest(d)),
        requested,
    )
    if resolved.tag != pypi.latest(doc):
        url = f"{base.rstrip('/')}/pypi/{pypi.normalize(project)}/{resolved.tag}/json"
        release = await _document(http, url, f"{label} {resolved.tag}", base)
    else:
        release = doc
    host = host_platform()
    # Only a wheel this host would install says what gets installed here: a
    # Windows-only wheel's entry points are not the source package's.
    wheels = [w for w in pypi.wheels(release) if pypi.wheel_fits(w["filename"], host.os, host.arch)]
    sdists = pypi.sdists(release)
    if wheels:
        data = (await http.get(wheels[0]["url"], max_bytes=WHEEL_MAX_BYTES)).body
        scripts = _wheel_scripts(data)
    elif sdists:
        data = (await http.get(sdists[0]["url"], max_bytes=WHEEL_MAX_BYTES)).body
        found = _sdist_scripts(data)
        if found is None:
            raise CreateError(
                f"{label} {resolved.tag} has no wheel for {host.os}/{host.arch}, and its "
                "source package does not list its console scripts in pyproject.toml: they "
                "cannot be read without building it",
                hint="Write the recipe by hand (pipx_install with its executables).",
            )
        scripts = found
    else:
        raise CreateError(
            f"{label} {resolved.tag} has no wheel for {host.os}/{host.arch}: its console "
            "scripts cannot be read without building it",
            hint="Write the recipe by hand (pipx_install with its executables).",
        )
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


def _sdist_scripts(data: bytes) -> list[str] | None:
    """``[project.scripts]`` of a source package's top-level pyproject.toml (read as
    text: nothing of it runs); None when it does not list them statically."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            top = [
                m
                for m in tar.getmembers()
                if m.isfile() and m.name.count("/") == 1 and m.name.endswith("/pyproject.toml")
            ]
            f = tar.extractfile(top[0]) if len(top) == 1 else None
            text = f.read(1024 * 1024).decode("utf-8", "replace") if f is not None else ""
    except (tarfile.TarError, OSError, EOFError):
        raise CreateError("the source package is not a readable gzipped tar file") from None
    return pypi.pyproject_scripts(text) if text else None


def _no_executables(label: str, what: str) -> CreateError:
    return CreateError(
        f"{label} declares no {what}",
        hint="It is a library, not a tool; nothing was written.",
    )


async def _package_bytes(http: Http, url: str) -> bytes:
    return (await http.get(url, max_bytes=PACKAGE_MAX_BYTES)).body


async def draft_crates(
    http: Http, base: str, tool: str, crate: str, requested: str | None
) -> Draft:
    label = f"crates_io package {crate}"
    doc, resolved = await _listed(
        http,
        base,
        label,
        crates.crate_url(base, crate),
        lambda d: (crates.versions(d), crates.latest(d)),
        requested,
    )
    bins = crates.bin_names(doc, resolved.tag)
    if bins is None:  # crates.io has not analysed it: read the published Cargo.toml
        data = await _package_bytes(http, crates.download_url(base, crate, resolved.tag))
        bins = _crate_bins(data, f"{crate}-{resolved.tag}/")
    if not bins:
        raise _no_executables(f"{label} {resolved.tag}", "binary (no [[bin]] target)")
    step = CargoInstallStep(crate=crate, executables=tuple(bins))
    info = _dict(doc.get("crate"))
    recipe, text = _recipe(
        tool, step, info.get("description"), info.get("homepage") or info.get("repository")
    )
    return Draft(recipe, step, resolved.version, resolved.tag, text)


def _crate_bins(data: bytes, top: str) -> list[str]:
    """The binaries of a ``.crate`` (a gzipped tar, everything under ``top``)."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            members = {m.name.removeprefix(top): m for m in tar.getmembers() if m.isfile()}
            manifest = members.get("Cargo.toml")
            f = tar.extractfile(manifest) if manifest is not None else None
            text = f.read(1024 * 1024).decode("utf-8", "replace") if f is not None else ""
    except (tarfile.TarError, OSError, EOFError):
        raise CreateError("the .crate is not a readable gzipped tar file") from None
    return crates.manifest_bins(text, list(members))


async def draft_rubygems(
    http: Http, base: str, tool: str, gem: str, requested: str | None
) -> Draft:
    label = f"rubygems package {gem}"
    _doc, resolved = await _listed(
        http,
        base,
        label,
        rubygems.versions_url(base, gem),
        lambda d: (rubygems.versions(d), rubygems.latest(d)),
        requested,
    )
    info = _dict(await _document(http, f"{base.rstrip('/')}/api/v1/gems/{gem}.json", label, base))
    data = await _package_bytes(http, rubygems.gem_url(base, gem, resolved.tag))
    executables = rubygems.gemspec_executables(_gem_metadata(data))
    if not executables:
        raise _no_executables(f"{label} {resolved.tag}", "executable")
    step = GemInstallStep(gem=gem, executables=tuple(executables))
    recipe, text = _recipe(
        tool, step, info.get("info"), info.get("homepage_uri") or info.get("source_code_uri")
    )
    return Draft(recipe, step, resolved.version, resolved.tag, text)


def _gem_metadata(data: bytes) -> str:
    """The YAML spec in a ``.gem`` (a plain tar holding ``metadata.gz``)."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            f = tar.extractfile("metadata.gz")
            packed = f.read(16 * 1024 * 1024) if f is not None else b""
        return gzip.decompress(packed).decode("utf-8", "replace")
    except (tarfile.TarError, KeyError, OSError, EOFError):
        raise CreateError("the .gem has no readable metadata.gz") from None


async def draft_go(http: Http, base: str, tool: str, package: str, requested: str | None) -> Draft:
    """A module whose root is its command, a package path inside a module (its
    versions are the module's: ``goproxy.version_module``), or a module with exactly
    one command in a sub-directory, which is then the package installed."""
    from tsukud.install.ecosystem.versions import FETCHERS

    module = goproxy.version_module(package)
    label = f"goproxy package {module}"
    try:
        listing = await FETCHERS["goproxy"](http, base, module)
    except TsukuError as exc:
        if getattr(exc, "status", None) not in (404, 410):
            raise
        raise CreateError(
            f"{label} does not exist at {base}",
            hint="Name the module path (its go.mod's module line), or a command's package "
            "path inside it; nothing was written.",
        ) from None
    resolved = check_version(choose(listing, requested, label))
    data = await _package_bytes(http, goproxy.zip_url(base, module, resolved.tag))
    mains = goproxy.main_packages(data, module, resolved.tag)
    inside = package.removeprefix(module).strip("/")
    if package == module and "" not in mains and len(mains) == 1:
        inside = mains[0]
        package = f"{module}/{inside}"
    if inside not in mains:
        listed = ", ".join(f"go:{module}/{m}".rstrip("/") for m in mains) or "none"
        raise CreateError(
            f"{label} {resolved.tag}: {package} is not a main package (commands: {listed})",
            hint="Name one command's package path with --from go:<path>; nothing was written.",
        )
    step = GoInstallStep(module=package, executables=(goproxy.binary_name(package),))
    version = None
    if goproxy.version_module(package) != module:  # the installer could not infer it
        version = VersionSection(source="goproxy", extra={"module": module})
    recipe, text = _recipe(tool, step, None, f"https://pkg.go.dev/{package}", version)
    return Draft(recipe, step, resolved.version, resolved.tag, text)


DRAFTERS = {
    "npm": draft_npm,
    "pypi": draft_pypi,
    "crates": draft_crates,
    "rubygems": draft_rubygems,
    "go": draft_go,
}
