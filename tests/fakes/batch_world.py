"""A registry maintainer's queue against the fakes: hundreds of sources from the fake
GitHub, the fake npm and PyPI and the fake Homebrew, some broken on purpose.

Used by the batch acceptance tests and ``bench/batch.py``. Every tool has its own name
(a batch exports one recipe per tool): a GitHub tool is one of the human recipes in
``../shared/fixtures/tsuku-recipes`` with its name replaced by a numbered one throughout
(repository, asset names, binaries), so the synthesised releases carry binaries named
after the tool, as a real project's do.

What each source should come to is known in advance (``expect``): ``done`` for the
sources a deterministic run can write a recipe for, ``failed`` for the broken ones
(a repository that does not exist, a release with source archives only, a package
that was never published). The test holds the batch to it.

    with batch_world(300) as world:
        env = world.env()          # TSUKU_GITHUB_URL, TSUKU_NPM_URL, ... for a daemon
        text = world.queue_text()  # "TOOL SOURCE" lines for ``tsukuctl batch add -``
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Self

from tests.fakes.ecosystems import FakeEcosystems
from tests.shared import RECIPES
from tsukud.recipe import Recipe, parse_recipe
from tsukud.testing.github import FakeGitHub
from tsukud.testing.homebrew import FakeHomebrew, Member, bottle_tarball
from tsukud.testing.http import leave
from tsukud.testing.packages import npm_tarball, wheel
from tsukud.testing.releases import FakeAsset, FakeRelease, FakeRepo, recipe_repo, script, tar_gz

VERSIONS = ["1.0.0", "1.1.0", "1.2.0"]
TOKEN = "ghp_batch_world_token_for_the_fake_github_only"
# Recipes the deterministic matcher writes a recipe for from synthesised releases
# (liberica's six JDK variants leave it unsure: tests/integration/create documents it).
MATCHED = (
    "age",
    "ast-grep",
    "atlantis",
    "cosign",
    "gitleaks",
    "gobuster",
    "k3d",
    "k9s",
    "kind",
    "stern",
    "tflint",
    "trivy",
)


@dataclass(frozen=True)
class Source:
    tool: str
    source: str
    expect: str  # "done" or "failed"
    why: str = ""  # what is broken, for a failed one


def renamed(text: str, old: str, new: str) -> str:
    """A recipe's TOML with its tool's name replaced wherever it stands as a word
    (repository, asset names, binaries, verify command)."""
    return re.sub(rf"(?<![A-Za-z0-9]){re.escape(old)}(?![A-Za-z0-9])", new, text)


def human_recipe(name: str) -> str:
    return (RECIPES / name[0] / f"{name}.toml").read_text()


@dataclass
class BatchWorld:
    github: FakeGitHub = field(default_factory=FakeGitHub)
    ecosystems: FakeEcosystems = field(default_factory=FakeEcosystems)
    homebrew: FakeHomebrew = field(default_factory=FakeHomebrew)
    sources: list[Source] = field(default_factory=list)

    def start(self) -> Self:
        self.github.start()
        self.ecosystems.start()
        self.homebrew.start()
        return self

    def close(self) -> None:
        for fake in (self.github, self.ecosystems, self.homebrew):
            fake.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        for fake in (self.github, self.ecosystems, self.homebrew):
            leave(fake, failed=exc_type is not None)

    def env(self) -> dict[str, str]:
        """Where a daemon finds the fakes, and the token the fake GitHub accepts: a batch
        reads far more than GitHub's 60 anonymous requests an hour, as a maintainer's
        token-holding pipeline does."""
        return {
            **self.github.env(),
            **self.ecosystems.env(),
            **self.homebrew.env(),
            "GITHUB_TOKEN": TOKEN,
        }

    def set_latency(self, seconds: float) -> None:
        """Every answer of every fake waits ``seconds``: registries across the internet."""
        servers = [self.ecosystems, *self.github.servers, *self.homebrew.servers]
        for server in servers:
            server.latency = seconds

    def queue_text(self) -> str:
        return "".join(f"{s.tool} {s.source}\n" for s in self.sources)

    def expected(self, outcome: str) -> set[str]:
        return {s.tool for s in self.sources if s.expect == outcome}

    # ---- building ----------------------------------------------------------------------

    def add_github_tool(self, base: str, tool: str) -> None:
        recipe: Recipe = parse_recipe(renamed(human_recipe(base), base, tool), f"{tool}.toml")
        repo = self.github.add_repo(recipe_repo(recipe, VERSIONS))
        self.sources.append(Source(tool, f"github:{repo.full_name}", "done"))

    def add_source_only_repo(self, tool: str) -> None:
        """A project whose releases carry nothing but source: no build to install."""
        tarball = FakeAsset(
            f"{tool}-1.0.0.tar.gz", tar_gz({f"{tool}-1.0.0/README": (b"read me\n", 0o644)})
        )
        self.github.add_repo(FakeRepo(f"{tool}/{tool}", [FakeRelease("v1.0.0", [tarball])]))
        self.sources.append(Source(tool, f"github:{tool}/{tool}", "failed", "no build"))

    def add_missing_repo(self, tool: str) -> None:
        self.sources.append(Source(tool, f"github:{tool}/{tool}", "failed", "no such repo"))

    def add_npm_tool(self, tool: str) -> None:
        self.ecosystems.publish_npm(npm_tarball(tool, "1.0.0", {tool: f"{tool} 1.0.0"}))
        self.sources.append(Source(tool, f"npm:{tool}", "done"))

    def add_missing_npm(self, tool: str) -> None:
        self.sources.append(Source(tool, f"npm:{tool}", "failed", "never published"))

    def add_pypi_tool(self, tool: str) -> None:
        self.ecosystems.publish_wheel(wheel(tool, "1.0.0", {tool: f"{tool} 1.0.0"}))
        self.sources.append(Source(tool, f"pypi:{tool}", "done"))

    def add_homebrew_tool(self, tool: str) -> None:
        version = "1.0.0"
        bottle = bottle_tarball(
            tool,
            version,
            {f"bin/{tool}": Member(script(tool, version), 0o755)},
        )
        self.homebrew.publish(tool, version, {"x86_64_linux": bottle, "arm64_linux": bottle})
        self.sources.append(Source(tool, f"homebrew:{tool}", "done"))


def _shares(n: int) -> Iterator[tuple[str, int]]:
    """How ``n`` sources divide among the kinds: mostly GitHub releases, as in tsuku's
    own queue, then the ecosystems and bottles, and one in twelve broken."""
    broken = max(3, n // 12)
    rest = n - broken
    npm = rest // 6
    pypi = rest // 8
    brew = rest // 15
    yield "github", rest - npm - pypi - brew
    yield "npm", npm
    yield "pypi", pypi
    yield "homebrew", brew
    yield "broken", broken


def batch_world(n: int) -> BatchWorld:
    """``n`` sources (not started)."""
    world = BatchWorld()
    world.github.add_token(TOKEN)
    counts = dict(_shares(n))
    for i in range(counts["github"]):
        base = MATCHED[i % len(MATCHED)]
        world.add_github_tool(base, f"{base}{i}")
    for i in range(counts["npm"]):
        world.add_npm_tool(f"npmtool{i}")
    for i in range(counts["pypi"]):
        world.add_pypi_tool(f"pytool{i}")
    for i in range(counts["homebrew"]):
        world.add_homebrew_tool(f"brewtool{i}")
    broken = (world.add_missing_repo, world.add_source_only_repo, world.add_missing_npm)
    for i in range(counts["broken"]):
        broken[i % len(broken)](f"broken{i}")
    assert len(world.sources) == n, (len(world.sources), n)
    return world
