"""The two small flows the install and create commands share: the no-release-build
fallback (flows/no_build.py) and "install, or discover when there is no recipe"
(flows/install_tool.py). Their collaborators are in-test services that record how they
were called; the commands end to end are tests/integration/discover/test_instructions_e2e.py
and tests/integration/create/test_create_homebrew.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from msgspec import UNSET

from tsukud.create.errors import NoBinaryAssets
from tsukud.create.pipeline import CreateResult, ValidationSummary
from tsukud.errors import UserDeclined
from tsukud.flows.install_missing import LlmChoice
from tsukud.flows.install_tool import InstallRequest, InstallTool, ToolInstalled
from tsukud.flows.no_build import NO_PAGE_HINT, NoBuildFallback, PagePackage, PageRecipe
from tsukud.github.client import RepoNotFound
from tsukud.install.registry import RecipeNotFound
from tsukud.install.results import Installed
from tsukud.instructions.builder import InstructionsManual
from tsukud.rpc.protocol import HEADER, encode_frame
from tsukud.source import EcosystemPackage, GitHubRepo, HomebrewFormula, Page

NO_BUILD = NoBinaryAssets("no release asset is a build for linux or darwin", asset_count=3)


@dataclass
class Pages:
    """The instructions builder: a recipe, or the page's instructions as a package."""

    calls: list[tuple[str, Any]] = field(default_factory=list)
    manual: dict[str, Any] | None = None

    async def build(self, tool: str, url: str, **kw: Any) -> CreateResult:
        self.calls.append(("build", {"tool": tool, "url": url, **kw}))
        if self.manual is not None:
            raise InstructionsManual("the page says to use a package manager", **self.manual)
        return CreateResult(
            session="instructions-1",
            tool=tool,
            repo=url,
            tag="v1",
            version="1",
            recipe="[metadata]\n",
            generated_by="instructions",
            validation=ValidationSummary(status="passed", platform="linux/amd64"),
        )


def fallback(
    homepage: str | Exception | None = "https://acme.test/install", pages: Pages | None = None
) -> NoBuildFallback:
    async def home(repo: str) -> str | None:
        if isinstance(homepage, Exception):
            raise homepage
        return homepage

    return NoBuildFallback(homepage=home, instructions=pages or Pages())  # type: ignore[arg-type]


async def test_a_repository_s_homepage_is_the_page_to_read() -> None:
    page = await fallback().install_page(GitHubRepo("acme", "bar"), NO_BUILD)
    assert page == Page("https://acme.test/install")


@pytest.mark.parametrize("homepage", [None, RepoNotFound("gone")])
async def test_no_homepage_says_what_is_left(homepage: str | Exception | None) -> None:
    with pytest.raises(NoBinaryAssets) as left:
        await fallback(homepage).install_page(GitHubRepo("acme", "bar"), NO_BUILD)
    assert left.value.message == (
        "no release asset is a build for linux or darwin (no install page to read: GitHub "
        "names no homepage)"
    )
    assert left.value.hint == NO_PAGE_HINT and "npm:<package>" in NO_PAGE_HINT
    assert left.value.data == {"asset_count": 3}


async def test_only_a_repository_has_a_homepage_to_read() -> None:
    for source in (EcosystemPackage("npm", "x"), HomebrewFormula("wget")):
        with pytest.raises(NoBinaryAssets) as same:
            await fallback().install_page(source, NO_BUILD)
        assert same.value is NO_BUILD
    no_reader = NoBuildFallback(homepage=fallback().homepage, instructions=None)
    with pytest.raises(NoBinaryAssets) as same:
        await no_reader.install_page(GitHubRepo("acme", "bar"), NO_BUILD)
    assert same.value is NO_BUILD


async def test_the_page_s_recipe_comes_back_with_the_builder_s_arguments() -> None:
    pages = Pages()
    said: list[str] = []

    async def say(message: str) -> None:
        said.append(message)

    async def consent(uses: object) -> None:
        raise AssertionError("a page's own recipe is not a package to accept here")

    outcome = await fallback(pages=pages).read(
        "bar",
        Page("https://acme.test/install"),
        came_from="no_binary_assets",
        progress=_quiet,
        say=say,
        consent=consent,
        repo="acme/bar",
        refuse_strangers=True,
    )
    assert isinstance(outcome, PageRecipe) and outcome.result.generated_by == "instructions"
    assert pages.calls == [
        (
            "build",
            {
                "tool": "bar",
                "url": "https://acme.test/install",
                "came_from": "no_binary_assets",
                "progress": _quiet,
                "repo": "acme/bar",
                "refuse_strangers": True,
            },
        )
    ]
    assert said == []


MANUAL = {
    "kind": "ecosystem",
    "manager": "npm",
    "package": "@acme/bar",
    "install_command": "npm install -g @acme/bar",
    "uses": [{"host": "registry.npmjs.org"}],
}


async def test_a_page_s_package_is_used_only_after_the_person_s_yes() -> None:
    said: list[str] = []
    asked: list[object] = []

    async def say(message: str) -> None:
        said.append(message)

    async def yes(uses: object) -> None:
        asked.append(uses)

    outcome = await fallback(pages=Pages(manual=MANUAL)).read(
        "bar",
        Page("https://acme.test/"),
        came_from="discovery",
        progress=_quiet,
        say=say,
        consent=yes,
    )
    assert outcome == PagePackage(source=EcosystemPackage("npm", "@acme/bar"))
    assert asked == [MANUAL["uses"]]
    assert said == [
        "the install page https://acme.test/ says `npm install -g @acme/bar`: writing the "
        "recipe from npm:@acme/bar"
    ]

    async def no(uses: object) -> None:
        raise UserDeclined("not accepted")

    with pytest.raises(UserDeclined):  # no package comes back to be fetched
        await fallback(pages=Pages(manual=MANUAL)).read(
            "bar",
            Page("https://acme.test/"),
            came_from="discovery",
            progress=_quiet,
            say=say,
            consent=no,
        )


async def test_a_page_s_other_instructions_are_shown_not_run() -> None:
    async def never(uses: object) -> None:
        raise AssertionError("nothing to accept")

    script = {**MANUAL, "kind": "script"}
    with pytest.raises(InstructionsManual):
        await fallback(pages=Pages(manual=script)).read(
            "bar",
            Page("https://acme.test/"),
            came_from="discovery",
            progress=_quiet,
            say=_say_nothing,
            consent=never,
        )


async def _quiet(_frame: dict[str, Any]) -> None:
    return None


async def _say_nothing(_message: str) -> None:
    return None


# ------------------------------------------------------------------------- install_tool


@dataclass
class Recipes:
    source: str = "local"

    async def load(self, name: str) -> Any:
        return self


@dataclass
class Installer:
    has_recipe: bool
    calls: list[str] = field(default_factory=list)
    registry: Recipes = field(default_factory=Recipes)

    async def install(self, name: str, version: str | None = None, **kw: Any) -> Installed:
        self.calls.append(f"install {name}")
        if not self.has_recipe:
            raise RecipeNotFound(f"no recipe for {name}")
        return installed(name)


@dataclass
class Missing:
    calls: list[tuple[str, Any]] = field(default_factory=list)

    async def run(self, name: str, version: str | None, **kw: Any) -> Any:
        self.calls.append((name, kw))
        from tsukud.flows.install_missing import CreatedRecipe, MissingToolInstalled

        created = CreatedRecipe(
            recipe="/r.toml", session="s", generated_by="x", validation="passed", cost_usd=0.0
        )
        return MissingToolInstalled(
            install=installed(name), source="o/r", discovery=None, created=created
        )


def install_tool(has_recipe: bool) -> tuple[InstallTool, Installer, Missing]:
    installer, missing = Installer(has_recipe), Missing()
    flow = InstallTool(installer=installer, missing=lambda: missing)  # type: ignore[arg-type]
    return flow, installer, missing


def installed(name: str) -> Installed:
    return Installed(
        tool=name, version="1.0.0", already_installed=True, install_dir="/t", binaries=[name]
    )


def answer(done: ToolInstalled) -> dict[str, Any]:
    """What ``install`` sends: the flow's result through the RPC frame encoder."""
    body = json.loads(encode_frame({"id": 1, "result": done})[HEADER.size :])
    result: dict[str, Any] = body["result"]
    return result


INSTALLED = {"tool": "age", "version": "1.0.0", "already_installed": True}
INSTALLED_WHERE = {"install_dir": "/t", "binaries": ["age"]}


async def test_a_recipe_is_installed_and_nothing_is_discovered() -> None:
    flow, installer, missing = install_tool(True)
    done = await flow.run(InstallRequest(name="age", discover=True), progress=_quiet)
    # The installer's answer as it is: nothing of discovery or create, no tool calls.
    assert answer(done) == {**INSTALLED, **INSTALLED_WHERE}
    assert installer.calls == ["install age"] and missing.calls == []


async def test_with_a_recipe_the_tool_calls_asked_for_are_none() -> None:
    flow, _installer, _missing = install_tool(True)
    request = InstallRequest(name="age", collect_tool_stats=True)
    done = await flow.run(request, progress=_quiet)
    assert answer(done) == {**INSTALLED, **INSTALLED_WHERE, "tool_stats": []}


async def test_without_a_recipe_the_answer_says_how_it_was_written() -> None:
    flow, _installer, _missing = install_tool(False)
    request = InstallRequest(name="age", source=GitHubRepo("FiloSottile", "age"))
    wire = answer(await flow.run(request, progress=_quiet))
    assert list(wire) == [*INSTALLED, *INSTALLED_WHERE, "discovery", "created"]
    assert wire["discovery"] == {"source": "o/r", "stage": "from"}  # named, not discovered
    assert wire["created"] == {
        "recipe": "/r.toml",
        "session": "s",
        "generated_by": "x",
        "validation": "passed",
        "cost_usd": 0.0,
    }


async def test_no_recipe_is_an_error_unless_the_request_allows_discovery() -> None:
    flow, installer, missing = install_tool(False)
    with pytest.raises(RecipeNotFound):
        await flow.run(InstallRequest(name="age"), progress=_quiet)
    assert installer.calls == ["install age"] and missing.calls == []
    for request in (
        InstallRequest(name="age", discover=True),
        InstallRequest(name="age", source=GitHubRepo("FiloSottile", "age")),
    ):
        done = await flow.run(request, progress=_quiet)
        assert done.created is not UNSET and done.tool == "age"
    assert [kw["source"] for _, kw in missing.calls] == [None, GitHubRepo("FiloSottile", "age")]
    assert missing.calls[0][1]["llm"] == LlmChoice()


async def test_a_from_with_a_recipe_is_said_to_be_unused() -> None:
    flow, installer, missing = install_tool(True)
    frames: list[dict[str, Any]] = []

    async def progress(frame: dict[str, Any]) -> None:
        frames.append(frame)

    await flow.run(InstallRequest(name="hello", source=HomebrewFormula("hello")), progress=progress)
    assert frames == [
        {
            "stage": "note",
            "tool": "hello",
            "message": "a recipe for hello exists (local), so --from homebrew:hello is not "
            "used; `tsukuctl create hello --from homebrew:hello --force` replaces it",
        }
    ]
    assert installer.calls == ["install hello"] and missing.calls == []
