"""The no-recipe install flow (discover → create → install) with its typed results.

The three steps are small in-test services that do what the real ones promise
(discovery answers with a :class:`Discovery`, the generator with a ``CreateResult``, the
installer with its result dict) and record how they were called; the real ones are
exercised end to end in tests/integration/discover/test_discover_e2e.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from tsukud.create.pipeline import CreateResult
from tsukud.create.service import SavedRecipe
from tsukud.discover.errors import CreateUnavailable, DiscoveredElsewhere, DiscoveryNotFound
from tsukud.discover.model import Discovery
from tsukud.errors import ConfirmationRequired, ExitCode, UsageError, UserDeclined
from tsukud.flows.install_missing import (
    CreatedRecipe,
    InstallMissing,
    MissingToolInstalled,
    given_source,
)
from tsukud.install.results import Installed
from tsukud.source import FromSource, shown
from tsukud.validation.summary import ValidationSummary


@dataclass
class Log:
    calls: list[tuple[str, Any]] = field(default_factory=list)
    progress: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, body: dict[str, Any]) -> None:
        self.progress.append(body)


@dataclass
class Discoveries:
    log: Log
    found: Discovery | None

    async def discover(self, tool: str, **kw: Any) -> Discovery:
        self.log.calls.append(("discover", {"tool": tool, **kw}))
        if self.found is None:
            raise DiscoveryNotFound("nothing in the registry or on the web", hint="try --from")
        return self.found


@dataclass
class Generator:
    log: Log
    home: str = "/home/u/.tsuku"

    async def create(self, tool: str, source: FromSource, **kw: Any) -> CreateResult:
        self.log.calls.append(("create", {"tool": tool, "source": str(source), **kw}))
        return CreateResult(
            session="create-1",
            tool=tool,
            repo=shown(source),
            tag="v1.2.0",
            version="1.2.0",
            recipe="[metadata]\n",
            generated_by="deterministic",
            validation=ValidationSummary(status="passed", platform="linux/amd64"),
        )

    async def save(self, tool: str, text: str, **kw: Any) -> SavedRecipe:
        self.log.calls.append(("save", {"tool": tool, "text": text, **kw}))
        return SavedRecipe(tool=tool, path=f"{self.home}/recipes/{tool}.toml", sha256="0" * 64)


@dataclass
class Person:
    """Confirmations with a person at the terminal who answers ``says``; records what
    the client was sent to show."""

    log: Log
    says: bool
    frames: list[dict[str, Any]] = field(default_factory=list)

    async def ask(
        self,
        progress: Any,
        *,
        can_ask: bool,
        session: str | None,
        question: ConfirmationRequired,
        shown: dict[str, Any] | None = None,
    ) -> None:
        self.log.calls.append(("ask", {"session": session}))
        self.frames.append({"message": question.message, **question.data, **(shown or {})})
        if not can_ask:
            raise question
        if not self.says:
            raise UserDeclined("declined")


def installed(name: str, version: str) -> Installed:
    return Installed(
        tool=name,
        version=version,
        already_installed=False,
        install_dir=f"/home/u/.tsuku/tools/{name}-{version}",
        binaries=[name],
        session="install-1",
    )


@dataclass
class Installs:
    log: Log

    async def install(self, name: str, version: str | None = None, **kw: Any) -> Installed:
        self.log.calls.append(("install", {"name": name, "version": version, **kw}))
        return installed(name, version or "1.2.0")


def discovery(builder: str = "github", source: str = "stripe/stripe-cli") -> Discovery:
    return Discovery(
        tool="stripe-cli",
        session="discover-1",
        stage="registry" if builder == "github" else "ecosystem",
        builder=builder,
        source=source,
        reason="in the discovery registry",
        install_command={"npm": "npm install -g stripe", "cask": "brew install --cask stripe"}.get(
            builder
        ),
    )


def flow(
    found: Discovery | None = None, *, creator: bool = True, person: Person | None = None
) -> tuple[InstallMissing, Log]:
    log = person.log if person is not None else Log()
    return (
        InstallMissing(
            discovery=Discoveries(log, found),
            creator=Generator(log) if creator else None,
            installer=Installs(log),
            confirmations=person,  # type: ignore[arg-type]
        ),
        log,
    )


async def test_a_discovered_github_source_is_created_then_installed() -> None:
    found = discovery()
    f, log = flow(found)
    done = await f.run("Stripe-CLI", "1.2.0", progress=log, force=True, yes=True, can_ask=True)

    assert done == MissingToolInstalled(
        install=installed("stripe-cli", "1.2.0"),
        source="stripe/stripe-cli",
        discovery=found,
        created=CreatedRecipe(
            recipe="/home/u/.tsuku/recipes/stripe-cli.toml",
            session="create-1",
            generated_by="deterministic",
            validation="passed",
            cost_usd=0.0,
        ),
    )
    assert [name for name, _ in log.calls] == ["discover", "create", "save", "install"]
    assert log.calls[0][1] == {
        "tool": "stripe-cli",  # normalised
        "progress": log,
        "yes": True,
        "can_ask": True,
        "confirm": True,  # install asks before trusting a found source
        "check_recipes": False,
        "search_provider": None,
        "providers": None,
        "only_provider": None,
        "collect_tool_stats": False,
    }
    assert log.calls[1][1] == {
        "tool": "stripe-cli",
        "source": "github:stripe/stripe-cli",
        "progress": log,
        "confirmed": True,
        "can_ask": True,
        "providers": None,
        "only_provider": None,
        "collect_tool_stats": False,
        "version": "1.2.0",  # validated at the version asked for (install stripe-cli@1.2.0)
    }
    assert log.calls[2][1] == {
        "tool": "stripe-cli",
        "text": "[metadata]\n",
        "session": "create-1",
    }  # --yes accepted the recipe: nothing was asked
    assert log.calls[3][1] == {
        "name": "stripe-cli",
        "version": "1.2.0",
        "force": True,
        "progress": log,
        "can_ask": True,
        "yes": True,
    }
    assert [p["step"] for p in log.progress] == ["create", "created"]
    assert log.progress[1]["message"] == (
        "recipe written to /home/u/.tsuku/recipes/stripe-cli.toml "
        "(generated by deterministic; validation passed)"
    )


async def test_from_skips_discovery_and_bad_sources_are_usage_errors() -> None:
    f, log = flow()
    done = await f.run(
        "age", None, progress=log, source=given_source("github:FiloSottile/age"), yes=True
    )
    assert done.discovery is None and done.source == "FiloSottile/age"
    assert [name for name, _ in log.calls] == ["create", "save", "install"]

    f, log = flow()
    with pytest.raises(UsageError) as bad:
        await f.run("age", None, progress=log, source=given_source("gitlab:x/y"))
    assert bad.value.hint == (
        "Name the source as --from github:owner/repo, npm:<package>, pypi:<project>, "
        "crates:<crate>, rubygems:<gem>, go:<module> or homebrew:<formula>."
    )
    assert log.calls == []


async def test_an_ecosystem_package_without_a_builder_is_not_installed() -> None:
    found = discovery(builder="cask", source="stripe")
    f, log = flow(found)
    with pytest.raises(DiscoveredElsewhere) as elsewhere:
        await f.run("stripe-cli", None, progress=log)
    assert elsewhere.value.hint == "Install it with: brew install --cask stripe"
    assert elsewhere.value.data["discovery"] == msgspec.to_builtins(found)
    assert [name for name, _ in log.calls] == ["discover"]


async def test_an_ecosystem_hit_goes_through_its_builder() -> None:
    for builder, package, spec in (
        ("npm", "stripe", "npm:stripe"),
        ("pypi", "stripe-cli", "pypi:stripe-cli"),
        ("crates.io", "stripe-cli", "crates:stripe-cli"),
        ("rubygems", "stripe", "rubygems:stripe"),
        ("go", "example.com/stripe-cli", "go:example.com/stripe-cli"),
    ):
        found = discovery(builder=builder, source=package)
        f, log = flow(found)
        done = await f.run("stripe-cli", None, progress=log, yes=True)
        assert done.source == spec and done.discovery == found
        assert [name for name, _ in log.calls] == ["discover", "create", "save", "install"]
        assert log.calls[1][1]["source"] == spec
        assert any(spec in str(p.get("message")) for p in log.progress)


async def test_from_npm_or_pypi_skips_discovery() -> None:
    f, log = flow()
    done = await f.run(
        "prettier", None, progress=log, source=given_source("npm:prettier"), yes=True
    )
    assert done.discovery is None and done.source == "npm:prettier"
    assert log.calls[0] == ("create", log.calls[0][1]) and log.calls[0][1]["source"] == (
        "npm:prettier"
    )
    f, log = flow()
    for bad_name in ("npm:git+https://x", "crates:../x", "rubygems:-x", "go:not-a-path"):
        with pytest.raises(UsageError) as bad:
            await f.run("x", None, progress=log, source=given_source(bad_name))
        assert "crates:<crate>" in (bad.value.hint or "")
    assert log.calls == []
    f, log = flow()
    done = await f.run("rg", None, progress=log, source=given_source("crates:ripgrep"), yes=True)
    assert done.source == "crates:ripgrep" and log.calls[0][1]["source"] == "crates:ripgrep"


async def test_nothing_found_says_there_is_no_recipe_either() -> None:
    f, log = flow(None)
    with pytest.raises(DiscoveryNotFound) as nf:
        await f.run("stripe-cli", None, progress=log)
    assert nf.value.message == (
        "no recipe for stripe-cli, and discovery found no source: "
        "nothing in the registry or on the web"
    )
    assert nf.value.hint == "try --from"


async def test_without_a_generator_the_source_is_named_and_nothing_installed() -> None:
    f, log = flow(discovery(), creator=False)
    with pytest.raises(CreateUnavailable) as unavailable:
        await f.run("stripe-cli", None, progress=log)
    assert unavailable.value.data == {"source": "stripe/stripe-cli"}
    assert [name for name, _ in log.calls] == ["discover"]


async def test_without_a_terminal_or_yes_the_written_recipe_is_not_installed() -> None:
    f, log = flow()
    with pytest.raises(ConfirmationRequired) as unseen:
        await f.run("age", None, progress=log, source=given_source("github:FiloSottile/age"))
    assert unseen.value.exit_code == ExitCode.NOT_INTERACTIVE
    assert "must be reviewed before it is installed" in unseen.value.message
    assert unseen.value.hint.startswith("Run it again with --yes")
    assert "tsukuctl create age --from github:FiloSottile/age" in unseen.value.hint
    assert [name for name, _ in log.calls] == ["create"]  # nothing saved or installed


async def test_on_a_terminal_the_recipe_is_shown_whole_and_accepted_by_a_person() -> None:
    person = Person(Log(), says=True)
    f, log = flow(person=person)
    await f.run(
        "age", None, progress=log, source=given_source("github:FiloSottile/age"), can_ask=True
    )
    assert [name for name, _ in log.calls] == ["create", "ask", "save", "install"]
    (frame,) = person.frames
    assert frame["kind"] == "recipe" and frame["source"] == "github:FiloSottile/age"
    assert frame["question"] == "Install age with this recipe?"
    # The client gets the whole create result, so it renders create's own preview.
    assert frame["create"]["recipe"] == "[metadata]\n"
    assert frame["create"]["generated_by"] == "deterministic"
    # The ledger's record of the question holds the recipe's hash, not the recipe.
    assert set(frame["recipe"]) == {"tool", "sha256", "generated_by"}


async def test_a_declined_recipe_is_neither_saved_nor_installed() -> None:
    person = Person(Log(), says=False)
    f, log = flow(person=person)
    with pytest.raises(UserDeclined) as no:
        await f.run(
            "age", None, progress=log, source=given_source("github:FiloSottile/age"), can_ask=True
        )
    assert no.value.exit_code == ExitCode.USER_DECLINED
    assert "nothing was saved or installed" in no.value.message
    assert [name for name, _ in log.calls] == ["create", "ask"]


async def test_tool_stats_are_discoverys_then_creates() -> None:
    import msgspec.structs

    from tsukud.events.catalogue import ToolCalled

    search = {"name": "web_search", "ok": True, "duration_ms": 0, "query": "stripe-cli github"}
    found = msgspec.structs.replace(discovery(), tool_stats=(search,))
    f, log = flow(found)
    generator = f.creator
    assert generator is not None
    made = await generator.create("stripe-cli", "github:stripe/stripe-cli")
    fetched = ToolCalled(name="fetch_file", ok=True, duration_ms=12, path="README.md")

    async def create(tool: str, source: str, **kw: Any) -> CreateResult:
        log.calls.append(("create", {"tool": tool, "source": source, **kw}))
        return msgspec.structs.replace(made, tool_stats=(fetched,))

    generator.create = create  # type: ignore[method-assign]
    done = await f.run("stripe-cli", None, progress=log, yes=True, collect_tool_stats=True)
    assert done.tool_stats == (search, msgspec.to_builtins(fetched))
    asked = {name: kw for name, kw in log.calls if name in ("discover", "create")}
    assert asked["discover"]["collect_tool_stats"] is True
    assert asked["create"]["collect_tool_stats"] is True  # create was asked for them too
    plain = await f.run("stripe-cli", None, progress=log, yes=True)
    assert plain.tool_stats is None


def test_an_installpage_package_goes_to_its_registrys_builder() -> None:
    from tsukud.flows.no_build import page_package

    for manager, package, spec in (
        ("npm", "@fake/foo", "npm:@fake/foo"),
        ("pipx", "black", "pypi:black"),
        ("cargo", "ripgrep", "crates:ripgrep"),
        ("go", "golang.org/x/tools/cmd/goimports", "go:golang.org/x/tools/cmd/goimports"),
    ):
        data = {"kind": "ecosystem", "manager": manager, "package": package}
        assert str(page_package(data)) == spec
    assert page_package({"kind": "script", "manager": "npm", "package": "x"}) is None
    assert page_package({"kind": "ecosystem", "manager": "brew", "package": "x"}) is None
