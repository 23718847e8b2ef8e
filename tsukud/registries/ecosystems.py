"""The language ecosystems tsuku installs from: one frozen record each.

An ecosystem has several names, each the spelling one part of tsuku uses: discovery and
the ledger call crates.io's packages ``crates.io`` (the builder a probe reports),
``create --from`` calls them ``crates:``, a recipe's ``[version]`` calls their registry
``crates_io``, its step is ``cargo_install`` and the program it runs is ``cargo``. They
used to be paired up in a dozen tables across discovery, create, install, the recipe
format, the settings and the hints; every such table is now derived from
:data:`ECOSYSTEMS`, so the names cannot drift apart.

Adding an ecosystem is one record here, its reader module in ``registries/`` (the
registry's documents, and discovery's ``probe`` over them) and its runner module in
``install/ecosystem/`` (``install``, create's ``draft`` and validation's ``fetch``;
named by ``runner``: the installer imports it by name, so this core module knows no
feature), and nothing else: its recipe step is ``recipe/model.py``'s one
``EcosystemStep``, read and written under the record's ``package_key``. Discovery,
create, validation and the recipe format dispatch through the records; a unit test
keeps every mention of an ecosystem's names to this module, its reader, its runner and
the modules the record lists in ``modules``, and adds a made-up ecosystem the same way
(tests/unit/test_ecosystem_record.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tsukud.registries import crates, goproxy, npm, pypi, rubygems
from tsukud.registries._common import Get, PackageFacts

# ``probe(get, name, registry URL, download counts' URL)``: what the registry says about
# the package of that exact name, None when there is none (discovery's stage 2).
RegistryProbe = Callable[[Get, str, str, str], Awaitable[PackageFacts | None]]


@dataclass(frozen=True)
class Toolchain:
    """One program an ecosystem's runner runs (``npm``, ``python3``, ``cargo``, ...);
    finding it on PATH is the installer's (``install/ecosystem/toolchain.py``)."""

    program: str
    ecosystem: str  # what it is for, in words: "npm packages"
    debian_package: str
    upstream: str  # how to get it without Debian
    # Run with these arguments, it must exit 0 (python3 without the venv module does not).
    probe: tuple[str, ...] = ()
    # The registry recipe that installs this toolchain (tsuku's action's install-time
    # dependency): when the registry holds it, it is planned and installed first and the
    # runner runs its program; else the host's program on PATH is (docs/install.md).
    recipe: str | None = None
    # Whether what the ecosystem installs runs on this toolchain (tsuku's action's
    # runtime dependency: nodejs, python-standalone, ruby) or not (rust, go: compiled
    # once). Installed from its recipe, a runtime toolchain is a runtime dependency of
    # the tool (``remove`` refuses it) and the tool's commands run with it first on PATH.
    runtime: bool = False

    def hint(self) -> str:
        return (
            f"On Debian or Ubuntu: sudo apt-get install {self.debian_package}. "
            f"Otherwise: {self.upstream}. Then run the command again."
        )


@dataclass(frozen=True)
class UrlSetting:
    """A base URL an ecosystem is reached at: the config key, its environment variable
    and the public default (one setting points discovery, create and install at a mirror)."""

    key: str  # the config key: "discover.npm_url"
    env: str
    default: str
    doc: str = ""


@dataclass(frozen=True)
class VersionsDocument:
    """A registry whose one JSON document lists a package's versions: where it is, and
    how to read the versions and the latest from it."""

    url: Callable[[str, str], str]  # (base, name) -> URL
    versions: Callable[[Any], list[str]]
    latest: Callable[[Any], str | None]


@dataclass(frozen=True)
class Ecosystem:
    builder: str  # discovery's name, and the ledger's ``builder``: "crates.io"
    prefix: str  # ``create --from <prefix>:<package>``: "crates"
    label: str  # how a person names it: "crates.io", "PyPI"
    action: str  # the recipe step that installs a package: "cargo_install"
    package_key: str  # the step's key naming the package: "crate"
    version_source: str  # the ``[version] source`` of its registry: "crates_io"
    placeholder: str  # what follows the prefix, in the hints: "<crate>"
    name_kind: str  # a valid name, in words, for a refusal: "a crate name"
    valid_name: Callable[[str], bool]  # which names the registry can have
    registry: UrlSetting
    toolchain: Toolchain
    reader: str  # the registry's pure reader module: "tsukud.registries.crates"
    probe: RegistryProbe  # the reader's discovery probe
    runner: str | None  # the runner module (``install()``); None: parses, does not install
    install_command: str  # how a person would install it by hand: "cargo install {name}"
    # Discovery: a match passes with (min downloads, min versions) either (0 = not used);
    # the rank among equally popular matches; what the download count counts (None: the
    # registry does not report use).
    thresholds: tuple[int, int]
    priority: int
    downloads_counted: str | None
    # Where the versions are listed; None: not one JSON document (the Go proxy's list,
    # read by ``install/ecosystem/versions.py``).
    versions: VersionsDocument | None
    # A second URL: discovery's download counts (npm), the runner's index (cargo).
    downloads: UrlSetting | None = None
    index: UrlSetting | None = None
    step_name_kind: str = ""  # a recipe step's package, in words, when it differs
    # How tsuku's plan decomposes the step (its ``Decompose``): the primitive it becomes
    # ("cargo_build"), the parameters tsuku fills in by resolving the package with the
    # toolchain while planning (a lock file, the toolchain's version: named in the plan
    # step's ``computed_at_download``, never made up), the ones it always sets, and
    # whether tsuku's plan calls the primitive evaluable.
    plan_action: str = ""
    plan_resolved: tuple[str, ...] = ()
    plan_fixed: Mapping[str, Any] = field(default_factory=dict)
    plan_evaluable: bool = False
    # A second key the primitive names the package under (go_build's ``install_module``).
    plan_package_also: str = ""
    # Packages that install the ecosystem's own manager, which cannot lock itself:
    # tsuku plans them with another primitive (package -> primitive).
    plan_self_installed: Mapping[str, str] = field(default_factory=dict)
    # The instructions builder: the package manager an install page names for it
    # (``pipx`` for PyPI: what a page tells a person to type) and the words a page uses
    # for its command; None: a page's packages of it are shown, not built.
    page_manager: str | None = None
    page_words: tuple[str, ...] = ()
    # Product modules beside the record, the reader and the runner that hold this
    # ecosystem's own code (none but Go's version listing, read by the installer).
    modules: tuple[str, ...] = ()

    @property
    def names(self) -> frozenset[str]:
        """Every spelling of this ecosystem somewhere in tsuku."""
        return frozenset(
            {
                self.builder,
                self.prefix,
                self.action,
                self.version_source,
                self.toolchain.program,
            }
        )

    @property
    def source_hint(self) -> str:
        """``crates:<crate>``."""
        return f"{self.prefix}:{self.placeholder}"


def _url(name: str, default: str, doc: str = "") -> UrlSetting:
    return UrlSetting(f"discover.{name}_url", f"TSUKU_{name.upper()}_URL", default, doc)


ECOSYSTEMS: tuple[Ecosystem, ...] = (
    Ecosystem(
        builder="npm",
        prefix="npm",
        label="npm",
        action="npm_install",
        package_key="package",
        version_source="npm",
        placeholder="<package>",
        name_kind="an npm package name",
        valid_name=npm.valid_name,
        registry=_url("npm", "https://registry.npmjs.org"),
        downloads=_url("npm_downloads", "https://api.npmjs.org"),
        toolchain=Toolchain(
            program="npm",
            runtime=True,
            recipe="nodejs",
            ecosystem="npm packages",
            debian_package="npm",
            upstream="install Node.js (which includes npm) from https://nodejs.org/en/download",
        ),
        reader="tsukud.registries.npm",
        probe=npm.probe,
        versions=VersionsDocument(npm.packument_url, npm.versions, npm.latest),
        runner="tsukud.install.ecosystem.npm",
        plan_action="npm_exec",
        plan_resolved=("has_native_addons", "node_version", "npm_version", "package_lock"),
        plan_fixed={"ignore_scripts": True},
        plan_evaluable=True,
        install_command="npm install -g {name}",
        page_manager="npm",
        page_words=("npm", "npx", "yarn", "pnpm"),
        thresholds=(100, 5),
        priority=5,
        downloads_counted="weekly downloads",
    ),
    Ecosystem(
        builder="pypi",
        prefix="pypi",
        label="PyPI",
        action="pipx_install",
        package_key="package",
        version_source="pypi",
        placeholder="<project>",
        name_kind="a PyPI project name",
        valid_name=pypi.valid_name,
        registry=_url("pypi", "https://pypi.org"),
        toolchain=Toolchain(
            program="python3",
            runtime=True,
            recipe="python-standalone",
            ecosystem="PyPI packages (a venv per tool)",
            debian_package="python3-venv",
            upstream="install Python 3 from https://www.python.org/downloads/",
            probe=("-c", "import venv, ensurepip"),
        ),
        reader="tsukud.registries.pypi",
        probe=pypi.probe,
        versions=VersionsDocument(pypi.project_url, pypi.versions, pypi.latest),
        runner="tsukud.install.ecosystem.pipx",
        plan_action="pip_exec",
        plan_resolved=("has_native_addons", "locked_requirements", "python_version"),
        install_command="pipx install {name}",
        page_manager="pipx",
        page_words=("pipx", "pip", "pip3", "uv", "uvx"),
        thresholds=(0, 3),
        priority=4,
        downloads_counted=None,
    ),
    Ecosystem(
        builder="crates.io",
        prefix="crates",
        label="crates.io",
        action="cargo_install",
        package_key="crate",
        version_source="crates_io",
        placeholder="<crate>",
        name_kind="a crate name",
        valid_name=crates.valid_name,
        registry=_url("crates", "https://crates.io"),
        index=_url(
            "crates_index",
            "sparse+https://index.crates.io/",
            "cargo's index for cargo_install, in cargo's syntax (sparse+<url>/ or a "
            "git URL): crates.io's unless a mirror's",
        ),
        toolchain=Toolchain(
            program="cargo",
            recipe="rust",
            ecosystem="Rust crates",
            debian_package="cargo",
            upstream="install Rust with rustup from https://rustup.rs",
        ),
        reader="tsukud.registries.crates",
        probe=crates.probe,
        versions=VersionsDocument(crates.crate_url, crates.versions, crates.latest),
        runner="tsukud.install.ecosystem.cargo",
        plan_action="cargo_build",
        plan_resolved=("lock_checksum", "lock_data", "rust_version"),
        install_command="cargo install {name}",
        page_manager="cargo",
        page_words=("cargo",),
        thresholds=(100, 5),
        priority=3,
        downloads_counted="downloads in 90 days",
    ),
    Ecosystem(
        builder="rubygems",
        prefix="rubygems",
        label="RubyGems",
        action="gem_install",
        package_key="gem",
        version_source="rubygems",
        placeholder="<gem>",
        name_kind="a gem name",
        valid_name=rubygems.valid_name,
        registry=_url("rubygems", "https://rubygems.org"),
        toolchain=Toolchain(
            program="gem",
            runtime=True,
            recipe="ruby",
            ecosystem="Ruby gems",
            debian_package="ruby",
            upstream="install Ruby from https://www.ruby-lang.org/en/downloads/",
        ),
        reader="tsukud.registries.rubygems",
        probe=rubygems.probe,
        versions=VersionsDocument(rubygems.versions_url, rubygems.versions, rubygems.latest),
        runner="tsukud.install.ecosystem.gem",
        plan_action="gem_exec",
        plan_resolved=("lock_data", "ruby_version"),
        plan_self_installed={"bundler": "install_gem_direct"},
        install_command="gem install {name}",
        thresholds=(1000, 5),
        priority=6,
        downloads_counted="downloads in all",
    ),
    Ecosystem(
        builder="go",
        prefix="go",
        label="Go",
        action="go_install",
        package_key="module",
        version_source="goproxy",
        placeholder="<module>",
        name_kind="a Go module path",
        step_name_kind="a Go package path (example.com/tool)",
        valid_name=goproxy.valid_module,
        registry=_url("goproxy", "https://proxy.golang.org"),
        toolchain=Toolchain(
            program="go",
            recipe="go",
            ecosystem="Go modules",
            debian_package="golang-go",
            upstream="install Go from https://go.dev/dl/",
        ),
        reader="tsukud.registries.goproxy",
        probe=goproxy.probe,
        versions=None,
        runner="tsukud.install.ecosystem.golang",
        plan_action="go_build",
        plan_resolved=("go_sum", "go_version"),
        plan_package_also="install_module",
        install_command="go install {name}@latest",
        page_manager="go",
        page_words=("go",),
        thresholds=(0, 3),
        priority=7,
        downloads_counted=None,
        # The proxy lists versions as text: read by the installer's fetcher itself.
        modules=("tsukud.install.ecosystem.versions",),
    ),
)

BY_BUILDER: Mapping[str, Ecosystem] = {e.builder: e for e in ECOSYSTEMS}
BY_PREFIX: Mapping[str, Ecosystem] = {e.prefix: e for e in ECOSYSTEMS}
BY_ACTION: Mapping[str, Ecosystem] = {e.action: e for e in ECOSYSTEMS}
BY_VERSION_SOURCE: Mapping[str, Ecosystem] = {e.version_source: e for e in ECOSYSTEMS}
#: An install page's package manager -> its ecosystem (the instructions builder's).
BY_PAGE_MANAGER: Mapping[str, Ecosystem] = {
    e.page_manager: e for e in ECOSYSTEMS if e.page_manager is not None
}

#: The settings of every ecosystem's URLs, in the order ``config.py`` lists them.
URL_SETTINGS: tuple[UrlSetting, ...] = tuple(
    u for e in ECOSYSTEMS for u in (e.registry, e.index, e.downloads) if u is not None
)

#: What discovery's probes read: the builder's registry, and ``<builder>_downloads``
#: for a second base URL (npm's download counts).
DISCOVERY_URLS: Mapping[str, UrlSetting] = {
    **{e.builder: e.registry for e in ECOSYSTEMS},
    **{f"{e.builder}_downloads": e.downloads for e in ECOSYSTEMS if e.downloads},
}


def sources_hint(*, github: bool = True) -> str:
    """``github:owner/repo, npm:<package>, ..., go:<module> or homebrew:<formula>``: the
    sources ``--from`` accepts, for a hint."""
    names = [e.source_hint for e in ECOSYSTEMS]
    return listed([*(["github:owner/repo"] if github else []), *names, "homebrew:<formula>"])


def prefixes_hint() -> str:
    """``npm:, pypi:, crates:, rubygems:, go: or homebrew:``."""
    return listed([*(f"{e.prefix}:" for e in ECOSYSTEMS), "homebrew:"])


def labels() -> str:
    """``npm, PyPI, crates.io, RubyGems and Go``: the ecosystems, for a sentence."""
    return listed([e.label for e in ECOSYSTEMS], "and")


def listed(names: list[str], last: str = "or") -> str:
    """``a, b or c`` (``a`` alone)."""
    return f"{', '.join(names[:-1])} {last} {names[-1]}" if len(names) > 1 else names[0]
