"""A model may name an ecosystem package (``extract_source`` with builder npm, pypi,
crates.io, rubygems or go): the name is checked before any registry sees it, the
package is verified by its registry's probe (exists, fits the tool, passes the bar)
before it is offered, and one that cannot be verified is never auto-approved."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from tests.unit.discover.test_chain import World, request
from tsukud.discover.chain import discover
from tsukud.discover.choices import offerable
from tsukud.discover.ecosystem import ProbeReport
from tsukud.discover.errors import (
    DiscoveryConfirmationRequired,
    DiscoveryNotFound,
    DiscoveryUnverified,
)
from tsukud.discover.llm_discovery import ExtractError, parse_extract
from tsukud.discover.model import Candidate, Probe, RepoMeta
from tsukud.discover.verify import assess_package
from tsukud.llm.types import AssistantMessage, Citation, Response, StopReason, ToolCall, Usage

TOOL = "prettyfmt-cli"
FITS = Probe(
    builder="npm",
    source="prettyfmt",
    downloads=50_000,
    version_count=5,
    has_repository=True,
    description="A command-line formatter",
    latest="1.3.0",
    executables=("prettyfmt",),
)
NO_BIN = Probe(
    builder="npm",
    source="prettyfmt",
    downloads=50_000,
    version_count=5,
    description="A formatting library",
    executables=(),
)


def args(builder: str, source: str, confidence: int = 90) -> dict[str, Any]:
    return {
        "builder": builder,
        "source": source,
        "confidence": confidence,
        "evidence": ["https://prettyfmt.dev/install says npm install -g prettyfmt"],
        "reasoning": "the project's install page",
    }


def names(builder: str, source: str, confidence: int = 90) -> Response:
    """The model's answer: one extract_source call naming a package."""
    return Response(
        message=AssistantMessage(
            parts=(ToolCall("call-1", "extract_source", args(builder, source, confidence)),)
        ),
        stop_reason=StopReason.TOOL_USE,
        raw_stop_reason="tool_use",
        usage=Usage(input_tokens=900, output_tokens=60, web_search_requests=1),
        provider="anthropic",
        model="claude-test",
        citations=(
            Citation("https://prettyfmt.dev/install", "Install", "npm install -g prettyfmt"),
        ),
    )


def candidate(builder: str = "npm", source: str = "prettyfmt", confidence: int = 90) -> Candidate:
    return parse_extract(args(builder, source, confidence), seen=set())


# ---- the extract_source call --------------------------------------------------------------


def test_extract_source_takes_a_package_of_each_ecosystem() -> None:
    for builder, source in (
        ("npm", "prettyfmt"),
        ("npm", "@acme/prettyfmt"),
        ("pypi", "black"),
        ("crates.io", "ripgrep"),
        ("rubygems", "rubocop"),
        ("go", "golang.org/x/tools/gopls"),
    ):
        c = candidate(builder, source)
        assert (c.builder, c.source, c.seen_in_results) == (builder, source, False)


@pytest.mark.parametrize(
    ("builder", "source", "says"),
    [
        ("npm", "npm install -g prettyfmt", "is not a npm package name"),
        ("npm", "https://registry.npmjs.org/prettyfmt", "is not a npm package name"),
        ("pypi", "black==24.1", "is not a pypi package name"),
        ("crates.io", "--git=https://evil.example/x", "is not a crates.io package name"),
        ("homebrew", "prettyfmt", "builder must be one of github, instructions, crates.io"),
        ("npm", " ", "source is required (the package name)"),
    ],
)
def test_a_name_its_registry_cannot_have_goes_back_to_the_model(
    builder: str, source: str, says: str
) -> None:
    with pytest.raises(ExtractError) as exc:
        candidate(builder, source)
    assert says in str(exc.value)


# ---- the registry's verdict ---------------------------------------------------------------


def test_a_package_that_exists_and_fits_is_verified_and_auto_approvable() -> None:
    v = assess_package(candidate(), ProbeReport(matches=[FITS]), tool=TOOL)
    assert (v.status, v.popular, v.auto_approvable, v.spec) == (
        "verified",
        True,
        True,
        "npm:prettyfmt",
    )
    assert v.popularity == "npm package prettyfmt (50.0K downloads, 5 versions, has repository)"


def test_a_package_the_registry_does_not_know_is_rejected_and_not_offered() -> None:
    v = assess_package(candidate(), ProbeReport(), tool=TOOL)
    assert (v.status, v.reason) == ("rejected", "there is no npm package named prettyfmt")
    assert not offerable(v)


def test_a_package_that_does_not_fit_is_rejected_but_a_person_may_pick_it() -> None:
    v = assess_package(candidate(), ProbeReport(matches=[NO_BIN]), tool=TOOL)
    assert v.status == "rejected" and "it installs no executable" in (v.reason or "")
    assert offerable(v) and not v.auto_approvable


def test_a_registry_that_cannot_be_asked_leaves_it_unverified() -> None:
    for report in (ProbeReport(errors={"npm": "HTTP 503"}), ProbeReport(late=["npm"])):
        v = assess_package(candidate(), report, tool=TOOL)
        assert v.status == "unverified" and not v.auto_approvable
        assert "npm verification was SKIPPED" in v.warnings[0]


def test_low_confidence_is_rejected_whatever_the_registry_says() -> None:
    v = assess_package(candidate(confidence=40), ProbeReport(matches=[FITS]), tool=TOOL)
    assert (v.status, v.reason) == ("rejected", "confidence 40 is below 70")


# ---- through the chain --------------------------------------------------------------------


def world_with(report: ProbeReport, **kw: Any) -> tuple[World, list[tuple[str, str]]]:
    asked: list[tuple[str, str]] = []

    async def probe_package(builder: str, package: str) -> ProbeReport:
        asked.append((builder, package))
        return report

    world = World(answers=[names("npm", "prettyfmt")], **kw)
    world.probe_package = probe_package  # type: ignore[attr-defined]
    return world, asked


def deps(world: World) -> Any:
    return world.deps(
        probe_package=world.probe_package,  # type: ignore[attr-defined]
        from_prefixes={"npm": "npm", "pypi": "pypi"},
        known_names=lambda: ("ripgrep",),
    )


async def test_a_package_named_by_search_and_verified_is_the_answer_yes_approves() -> None:
    world, asked = world_with(ProbeReport(matches=[FITS]))
    found = await discover(request(TOOL, yes=True), deps(world))
    assert asked == [("npm", "prettyfmt")]
    assert (found.stage, found.builder, found.source, found.approval) == (
        "llm",
        "npm",
        "prettyfmt",
        "yes_flag",
    )
    assert found.install_command == "npm install -g prettyfmt"
    assert found.metadata["downloads"] == 50_000 and found.metadata["executables"] == ["prettyfmt"]
    assert found.sources == ("https://prettyfmt.dev/install",)
    assert world.last("discovery.candidate")["builder"] == "npm"
    assert world.last("discovery.completed")["builder"] == "npm"


async def test_the_person_sees_the_registrys_facts_before_saying_yes() -> None:
    world, _asked = world_with(ProbeReport(matches=[FITS]), replies=[True])
    found = await discover(request(TOOL, can_ask=True), deps(world))
    assert found.approval == "user"
    (q,) = world.questions
    for part in (
        "Source:       npm:prettyfmt  (npm install -g prettyfmt)",
        "Description:  A command-line formatter",
        "Downloads:    50,000",
        "Versions:     5 (latest 1.3.0)",
        "Executables:  prettyfmt",
        "Seen in search results:",
    ):
        assert part in q.message, part


async def test_an_unverifiable_package_is_never_auto_approved() -> None:
    world, _asked = world_with(ProbeReport(errors={"npm": "HTTP 503"}))
    with pytest.raises(DiscoveryUnverified) as exc:
        await discover(request(TOOL, yes=True), deps(world))
    assert (
        exc.value.message == "npm:prettyfmt could not be verified: npm could not be asked: HTTP 503"
    )
    assert "GITHUB_TOKEN" not in (exc.value.hint or "")

    world, _asked = world_with(ProbeReport(errors={"npm": "HTTP 503"}), replies=[True])
    found = await discover(request(TOOL, yes=True, can_ask=True), deps(world))
    assert found.approval == "user"  # a person said yes, --yes did not
    assert "NOT VERIFIED" in world.questions[0].message


async def test_a_package_that_does_not_fit_is_only_a_choice_never_yes() -> None:
    world, _asked = world_with(ProbeReport(matches=[NO_BIN]))
    with pytest.raises(DiscoveryConfirmationRequired) as exc:
        await discover(request(TOOL, yes=True), deps(world))
    assert "1. npm:prettyfmt  (50.0K weekly downloads, 5 versions" in exc.value.message
    assert "not recommended: it installs no executable" in exc.value.message
    assert "tsukuctl install prettyfmt-cli --from npm:prettyfmt" in (exc.value.hint or "")


async def test_a_package_the_registry_does_not_know_is_not_found() -> None:
    world, _asked = world_with(ProbeReport())
    with pytest.raises(DiscoveryNotFound) as exc:
        await discover(request(TOOL, yes=True), deps(world))
    assert "npm:prettyfmt: there is no npm package named prettyfmt" in exc.value.message


async def test_a_package_named_like_the_tool_reuses_the_ecosystem_stages_answer() -> None:
    """The ecosystem stage already asked npm about ``prettyfmt`` (it installs nothing, so
    the chain went on to search): the model naming it is judged on that answer, and the
    package is offered once."""
    world, asked = world_with(ProbeReport(matches=[FITS]), probes=[NO_BIN])
    with pytest.raises(DiscoveryConfirmationRequired) as exc:
        await discover(request("prettyfmt", yes=True), deps(world))
    assert asked == []  # no second request to npm
    assert exc.value.message.count("npm:prettyfmt") == 1
    assert [c["found_by"] for c in exc.value.data["choices"]] == ["llm"]


async def test_a_repository_and_a_package_that_both_clear_the_bar_are_a_choice() -> None:
    repo_args = {**args("github", "acme/prettyfmt"), "evidence": ["github.com/acme/prettyfmt"]}
    both = names("npm", "prettyfmt")
    both = msgspec.structs.replace(
        both,
        message=AssistantMessage(
            parts=(*both.message.parts, ToolCall("call-2", "extract_source", repo_args))
        ),
    )
    world, _asked = world_with(ProbeReport(matches=[FITS]), picks=[2])
    world.answers = [both]
    world.repos = {"acme/prettyfmt": RepoMeta(full_name="acme/prettyfmt", stars=900)}
    found = await discover(request(TOOL, can_ask=True), deps(world))
    (question, _options) = world.choices[0]
    assert "2 clear the bar for a recommendation" in question.message
    assert "recommended: verified on GitHub, not a fork, 900 stars" in question.message
    assert "recommended: found on npm and fits prettyfmt-cli, npm package prettyfmt" in (
        question.message
    )
    assert question.data["offered"] == ["github:acme/prettyfmt", "npm:prettyfmt"]
    assert (found.builder, found.source, found.approval) == ("npm", "prettyfmt", "user")
