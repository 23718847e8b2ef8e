"""The discovery chain through its seam, ``chain.Deps``: every stage's outcome and every
typed error, with plain Python stand-ins for the ecosystems, GitHub, the registry and an
LLM run (scripted answers in the real ``Response`` type). No network, no SDK."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import msgspec
import pytest
import trio

from tsukud.clock import FixedClock, TrioClock
from tsukud.discover.chain import Deps, RecipeRegistryUnreachable, Request, discover
from tsukud.discover.ecosystem import ProbeReport
from tsukud.discover.errors import (
    DiscoveryAmbiguous,
    DiscoveryBudgetExceeded,
    DiscoveryConfirmationRequired,
    DiscoveryDenied,
    DiscoveryNotFound,
    DiscoveryTimeout,
    DiscoveryUnverified,
    InvalidToolName,
)
from tsukud.discover.model import Probe, RepoMeta
from tsukud.discover.registry_lookup import Entry, Lookup
from tsukud.errors import BudgetExceeded, ConfirmationRequired, ExitCode, UserDeclined
from tsukud.github.client import GitHubRateLimited, RepoNotFound
from tsukud.llm.types import (
    AssistantMessage,
    Citation,
    Response,
    StopReason,
    ToolCall,
    Usage,
)
from tsukud.llm.types import (
    Request as LLMRequest,
)

NOW = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.UTC)
STRIPE = RepoMeta(
    full_name="stripe/stripe-cli",
    stars=1800,
    owner="stripe",
    owner_type="Organization",
    created_at="2019-03-21T17:05:01Z",
    pushed_at="2026-11-19T10:00:00Z",
)


def probe(builder: str, downloads: int, versions: int = 5, repo: bool = True) -> Probe:
    return Probe(
        builder=builder,
        source="stripe-cli",
        downloads=downloads,
        version_count=versions,
        has_repository=repo,
    )


def extract(source: str, confidence: int = 90, *more: tuple[str, int]) -> Response:
    """The model's answer: ``extract_source`` calls, after a search that found them."""
    calls = tuple(
        ToolCall(
            id=f"call-{i}",
            name="extract_source",
            arguments={
                "builder": "github",
                "source": src,
                "confidence": conf,
                "evidence": [f"https://github.com/{src} is the official CLI"],
                "reasoning": "the vendor's docs link to it",
            },
        )
        for i, (src, conf) in enumerate(((source, confidence), *more), 1)
    )
    return Response(
        message=AssistantMessage(parts=calls),
        stop_reason=StopReason.TOOL_USE,
        raw_stop_reason="tool_use",
        usage=Usage(input_tokens=900, output_tokens=60, web_search_requests=1),
        provider="anthropic",
        model="claude-test",
        citations=(Citation(f"https://github.com/{source}", "the repository", "stripe cli"),),
    )


@dataclass
class FakeRun:
    """What ``LLMDiscovery`` uses of ``tsukud.llm.service.Run``."""

    answers: list[Response]
    spent: Decimal = Decimal(0)
    unpriced_turns: int = 0
    requests: list[tuple[LLMRequest, str | None]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    async def complete(self, request: LLMRequest, *, only: str | None = None) -> Response:
        self.requests.append((request, only))
        self.spent += Decimal("0.012")
        return self.answers.pop(0)


@dataclass
class FakeRegistry:
    entries: dict[str, Entry] = field(default_factory=dict)

    async def lookup(self, name: str) -> Lookup:
        entry = self.entries.get(name)
        return Lookup(entry, "network" if entry else "none")


@dataclass
class World:
    """Everything the chain reaches, recording what it was asked."""

    probes: list[Probe] = field(default_factory=list)
    probe_delay: float = 0.0
    recipes: dict[str, str] = field(default_factory=dict)
    registry: FakeRegistry = field(default_factory=FakeRegistry)
    repos: dict[str, RepoMeta | Exception] = field(default_factory=dict)
    answers: list[Response] | None = None  # None: no LLM configured
    budget_left: bool = True
    replies: list[bool] = field(default_factory=list)  # the user's y/N, in order
    picks: list[int | None] = field(default_factory=list)  # the user's numbered choices
    choices: list[tuple[ConfirmationRequired, list[dict[str, Any]]]] = field(default_factory=list)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    questions: list[ConfirmationRequired] = field(default_factory=list)
    llm_opened: list[dict[str, Any]] = field(default_factory=list)
    run: FakeRun | None = None

    async def probe(self, _tool: str) -> ProbeReport:
        await trio.sleep(self.probe_delay)
        return ProbeReport(matches=list(self.probes), accepted=list(self.probes))

    async def github_meta(self, source: str) -> RepoMeta:
        found = self.repos.get(source, RepoNotFound(f"{source} not found"))
        if isinstance(found, Exception):
            raise found
        return found

    async def recipe_lookup(self, tool: str) -> str | None:
        return self.recipes.get(tool)

    @asynccontextmanager
    async def open_llm(self, **kw: Any) -> AsyncIterator[FakeRun]:
        self.llm_opened.append(kw)
        if not self.budget_left:
            raise BudgetExceeded("a discovery may cost $0.40; $0.10 is left today", left=0.1)
        assert self.answers is not None
        self.run = FakeRun(list(self.answers))
        yield self.run

    async def ask(self, question: ConfirmationRequired) -> None:
        self.questions.append(question)
        if not self.replies.pop(0):
            raise UserDeclined("no")

    async def choose(
        self, question: ConfirmationRequired, options: list[dict[str, Any]]
    ) -> int | None:
        self.choices.append((question, options))
        return self.picks.pop(0)

    async def emit(self, type_: str, payload: dict[str, Any]) -> None:
        self.events.append((type_, payload))

    def deps(self, **overrides: Any) -> Deps:
        deps = Deps(
            probe=self.probe,
            github_meta=self.github_meta,
            registry=self.registry,  # type: ignore[arg-type]  # duck-typed stand-in
            recipe_lookup=self.recipe_lookup,
            known_names=lambda: ("stripe-cli", "ripgrep"),
            open_llm=self.open_llm if self.answers is not None else None,  # type: ignore[arg-type]
            llm_providers=(lambda _order: [("claude", "claude-test")])
            if self.answers is not None
            else None,
            ask=self.ask,
            choose=self.choose,
            emit=self.emit,
            clock=FixedClock(NOW.timestamp()),
            timeout_s=15.0,
        )
        for k, v in overrides.items():
            setattr(deps, k, v)
        return deps

    def types(self) -> list[str]:
        return [t for t, _ in self.events]

    def last(self, type_: str) -> dict[str, Any]:
        return [p for t, p in self.events if t == type_][-1]


def request(tool: str = "stripe-cli", **kw: Any) -> Request:
    return Request(tool=tool, session="s-test", **kw)


# ---- stage 1: the registry -----------------------------------------------------------------


async def test_a_recipe_answers_before_any_probe() -> None:
    world = World(recipes={"stripe-cli": "registry"}, probes=[probe("npm", 10)])
    found = await discover(request(), world.deps())
    assert (found.stage, found.builder, found.source, found.approval) == (
        "recipe",
        "recipe",
        "registry",
        "trusted",
    )
    assert world.types() == [
        "discovery.started",
        "discovery.stage",
        "discovery.completed",
    ]
    assert world.last("discovery.stage")["outcome"] == "hit"


async def test_a_discovery_entry_names_the_source_and_how_to_install_it() -> None:
    world = World(registry=FakeRegistry({"stripe-cli": Entry(builder="npm", source="stripe")}))
    found = await discover(request(check_recipes=False), world.deps())
    assert (found.stage, found.builder, found.source) == ("registry", "npm", "stripe")
    assert found.install_command is not None and "stripe" in found.install_command
    assert found.approval == "trusted"


# ---- stage 2: ecosystems ---------------------------------------------------------------------


async def test_one_ecosystem_match_is_a_candidate_a_yes_accepts() -> None:
    world = World(probes=[probe("crates.io", 50_000)])
    found = await discover(request(yes=True), world.deps())
    assert (found.stage, found.builder, found.approval) == ("ecosystem", "crates.io", "yes_flag")
    assert found.metadata["selection"] == "single_match"
    # a name is not an identity: without a yes and a terminal, nobody accepted it
    with pytest.raises(DiscoveryConfirmationRequired) as exc:
        await discover(request(), World(probes=world.probes).deps())
    assert "Run it again with --yes to accept crates.io:stripe-cli" in exc.value.hint


async def test_one_package_with_no_repository_or_no_use_is_never_taken_by_yes() -> None:
    for bare in (probe("npm", 50_000, repo=False), probe("npm", 0, versions=40)):
        world = World(probes=[bare])
        with pytest.raises(DiscoveryConfirmationRequired) as exc:
            await discover(request(yes=True), world.deps(from_prefixes={"npm": "npm"}))
        assert "found by its name alone" in exc.value.message
        assert "tsukuctl install stripe-cli --from npm:stripe-cli" in exc.value.hint
        world = World(probes=[bare], picks=[1])  # a person's explicit pick takes it
        found = await discover(request(yes=True, can_ask=True), world.deps())
        assert (found.builder, found.approval) == ("npm", "user")


async def test_ten_times_the_downloads_is_a_clear_winner() -> None:
    world = World(probes=[probe("npm", 2_000), probe("crates.io", 20_000)])
    found = await discover(request(yes=True), world.deps())
    assert (found.builder, found.metadata["selection"]) == ("crates.io", "10x_popularity_gap")
    assert found.metadata["downloads_ratio"] == 10.0
    assert [a["builder"] for a in found.alternatives] == ["npm"]


async def test_close_matches_are_a_numbered_choice_and_the_pick_is_the_answer() -> None:
    world = World(probes=[probe("npm", 9_000), probe("crates.io", 10_000)], picks=[2])
    found = await discover(request(can_ask=True), world.deps())
    assert (found.stage, found.builder, found.source, found.approval) == (
        "ecosystem",
        "npm",
        "stripe-cli",
        "user",
    )
    (question, options) = world.choices[0]
    assert question.data["kind"] == "discovery.choice"
    assert question.data["offered"] == ["crates.io:stripe-cli", "npm:stripe-cli"]
    assert "2 packages in different ecosystems fit, none used ten times more" in question.message
    assert (
        "1. crates.io:stripe-cli  (10.0K downloads in 90 days, 5 versions, age unknown, "
        "has repository)" in question.message
    )
    assert (
        "2. npm:stripe-cli  (9.0K weekly downloads, 5 versions, age unknown, has repository)"
        in question.message
    )
    assert "recommended: it fits stripe-cli and passes npm's bar" in question.message
    assert [o["number"] for o in options] == [1, 2]
    assert not world.questions  # no y/N one at a time


async def test_yes_never_picks_among_ties() -> None:
    world = World(probes=[probe("npm", 9_000), probe("pypi", 10_000)], picks=[1])
    found = await discover(request(can_ask=True, yes=True), world.deps())
    assert (found.builder, found.approval) == ("pypi", "user")  # a person picked it
    assert len(world.choices) == 1
    with pytest.raises(DiscoveryAmbiguous):  # --yes without a terminal: nobody picks
        await discover(request(yes=True), World(probes=world.probes).deps())


async def test_close_matches_without_a_terminal_are_ambiguous_naming_each_from() -> None:
    world = World(probes=[probe("npm", 9_000), probe("pypi", 10_000), probe("rubygems", 9_500)])
    deps = world.deps(from_prefixes={"npm": "npm", "pypi": "pypi"})
    with pytest.raises(DiscoveryAmbiguous) as exc:
        await discover(request(), deps)
    assert exc.value.exit_code == ExitCode.AMBIGUOUS
    assert [c["kind"] for c in exc.value.data["choices"]] == ["pypi", "rubygems", "npm"]
    assert exc.value.hint == (
        "Run it on a terminal to choose, or name the one you mean: "
        "tsukuctl install stripe-cli --from pypi:stripe-cli; "
        "gem install stripe-cli; "  # no recipe builder for it here: its own command
        "tsukuctl install stripe-cli --from npm:stripe-cli"
    )
    assert world.last("discovery.failed")["error_code"] == "discovery_ambiguous"


async def test_declining_every_close_match_is_denied() -> None:
    world = World(probes=[probe("npm", 9_000), probe("pypi", 10_000)], picks=[None])
    with pytest.raises(DiscoveryDenied):
        await discover(request(can_ask=True), world.deps())


# ---- stage 3: the LLM's web search, verified -------------------------------------------------


async def test_a_verified_popular_repository_is_approved_by_yes() -> None:
    world = World(answers=[extract("stripe/stripe-cli")], repos={"stripe/stripe-cli": STRIPE})
    found = await discover(request(yes=True), world.deps())
    assert (found.stage, found.builder, found.source) == ("llm", "github", "stripe/stripe-cli")
    assert (found.approval, found.confidence, found.provider) == ("yes_flag", 90, "claude")
    assert found.sources == ("https://github.com/stripe/stripe-cli",)
    assert found.spent_usd == 0.012 and found.llm_turns == 1 and found.searches == 1
    assert world.llm_opened[0]["purpose"] == "discovery" and world.llm_opened[0]["confirmed"]
    assert world.last("discovery.verified")["source"] == "stripe/stripe-cli"
    assert world.last("discovery.completed")["approval"] == "yes_flag"


async def test_the_user_approves_or_declines_what_search_found() -> None:
    for reply, outcome in ((True, "user"), (False, None)):
        world = World(
            answers=[extract("stripe/stripe-cli")],
            repos={"stripe/stripe-cli": STRIPE},
            replies=[reply],
        )
        if outcome is None:
            with pytest.raises(DiscoveryDenied) as exc:
                await discover(request(can_ask=True), world.deps())
            assert exc.value.exit_code == ExitCode.USER_DECLINED
        else:
            found = await discover(request(can_ask=True), world.deps())
            assert found.approval == outcome
        assert world.questions[0].data["question"] == "Install stripe-cli from this source?"


async def test_a_fork_is_never_approved_by_yes_alone() -> None:
    fork = RepoMeta(
        full_name="someone/stripe-cli",
        stars=900,
        fork=True,
        parent="stripe/stripe-cli",
        parent_stars=1800,
        created_at="2024-01-01T00:00:00Z",
        pushed_at="2026-11-01T00:00:00Z",
    )
    world = World(answers=[extract("someone/stripe-cli")], repos={"someone/stripe-cli": fork})
    with pytest.raises(DiscoveryConfirmationRequired) as exc:
        await discover(request(yes=True), world.deps())
    assert "it is a fork" in exc.value.message
    assert exc.value.exit_code == ExitCode.NOT_INTERACTIVE
    assert "--from github:stripe/stripe-cli" in exc.value.hint


TRANSFERRED = RepoMeta(
    full_name="mallory/stripe-cli",  # GitHub redirected stripe/stripe-cli here
    stars=1800,
    owner="mallory",
    owner_type="User",
    created_at="2019-03-21T17:05:01Z",
    pushed_at="2026-11-19T10:00:00Z",
)


async def test_an_owner_change_is_never_approved_by_yes() -> None:
    world = World(answers=[extract("stripe/stripe-cli")], repos={"stripe/stripe-cli": TRANSFERRED})
    with pytest.raises(DiscoveryConfirmationRequired) as exc:
        await discover(request(yes=True), world.deps())
    assert "its owner changed from stripe to mallory" in exc.value.message
    assert exc.value.exit_code == ExitCode.NOT_INTERACTIVE


async def test_an_owner_change_is_shown_to_the_person_who_decides() -> None:
    world = World(
        answers=[extract("stripe/stripe-cli")],
        repos={"stripe/stripe-cli": TRANSFERRED},
        replies=[True],
    )
    found = await discover(request(yes=True, can_ask=True), world.deps())
    assert found.approval == "user"  # a person said yes, not --yes
    assert found.source == "mallory/stripe-cli"
    asked = world.questions[0]
    assert "OWNER CHANGED: the search named stripe, GitHub now says mallory" in asked.message
    assert "Not approved automatically: its owner changed from stripe to mallory" in (asked.message)
    assert asked.data["discovery"]["previous_owner"] == "stripe"


async def test_a_rename_by_the_same_owner_is_still_approved_by_yes() -> None:
    renamed = msgspec.structs.replace(STRIPE, full_name="Stripe/stripe")
    world = World(answers=[extract("stripe/stripe-cli")], repos={"stripe/stripe-cli": renamed})
    found = await discover(request(yes=True), world.deps())
    assert found.approval == "yes_flag" and found.source == "Stripe/stripe"


async def test_a_repository_github_does_not_know_is_rejected() -> None:
    world = World(answers=[extract("stripe/stripe-cli-typo")])
    with pytest.raises(DiscoveryNotFound) as exc:
        await discover(request(yes=True), world.deps())
    assert exc.value.data["rejected"] == [
        {"source": "stripe/stripe-cli-typo", "reason": "the repository does not exist on GitHub"}
    ]
    assert exc.value.exit_code == ExitCode.RECIPE_NOT_FOUND


async def test_low_confidence_is_never_picked_by_yes_but_offered_as_a_choice() -> None:
    world = World(answers=[extract("stripe/stripe-cli", confidence=40)])
    world.repos["stripe/stripe-cli"] = STRIPE
    with pytest.raises(DiscoveryConfirmationRequired) as exc:
        await discover(request(yes=True), world.deps())
    assert "1. github:stripe/stripe-cli  (1,800 stars, created 7 years ago, owner stripe" in (
        exc.value.message
    )
    assert "not recommended: confidence 40 is below 70" in exc.value.message
    assert "tsukuctl install stripe-cli --from github:stripe/stripe-cli" in exc.value.hint
    assert exc.value.data["choices"][0]["source"] == "stripe/stripe-cli"


def small(name: str, stars: int) -> RepoMeta:
    return RepoMeta(
        full_name=name, stars=stars, owner=name.split("/")[0], created_at="2025-11-01T00:00:00Z"
    )


async def test_two_candidates_below_the_bar_are_a_numbered_choice() -> None:
    world = World(
        answers=[extract("alice/sterm", 90, ("bob/sterm", 75))],
        repos={"alice/sterm": small("alice/sterm", 12), "bob/sterm": small("bob/sterm", 30)},
        picks=[2],
    )
    found = await discover(request("sterm", yes=True, can_ask=True), world.deps())
    assert (found.builder, found.source, found.approval) == ("github", "bob/sterm", "user")
    (question, options) = world.choices[0]
    assert question.data["kind"] == "discovery.choice"
    assert question.data["offered"] == ["github:alice/sterm", "github:bob/sterm"]
    assert [(o["number"], o["source"], o["recommended"]) for o in options] == [
        (1, "alice/sterm", False),
        (2, "bob/sterm", False),
    ]
    assert "12 stars (fewer than 50)" in question.message
    assert "created 1 year ago" in question.message and "owner bob" in question.message
    assert [a["source"] for a in found.alternatives] == ["alice/sterm"]


async def test_picking_none_of_the_choices_is_denied() -> None:
    world = World(
        answers=[extract("alice/sterm", 90, ("bob/sterm", 75))],
        repos={"alice/sterm": small("alice/sterm", 12), "bob/sterm": small("bob/sterm", 30)},
        picks=[None],
    )
    with pytest.raises(DiscoveryDenied, match="none of the 2 sources for sterm was chosen"):
        await discover(request("sterm", can_ask=True), world.deps())


async def test_several_above_the_bar_are_a_choice_unless_yes_takes_the_first() -> None:
    other = RepoMeta(full_name="stripe/cli-next", stars=900, owner="stripe")
    answers = [extract("stripe/stripe-cli", 95, ("stripe/cli-next", 80))]
    repos: dict[str, RepoMeta | Exception] = {"stripe/stripe-cli": STRIPE, "stripe/cli-next": other}
    world = World(answers=list(answers), repos=dict(repos), picks=[2])
    found = await discover(request(can_ask=True), world.deps())
    assert (found.source, found.approval) == ("stripe/cli-next", "user")
    assert [o["recommended"] for o in world.choices[0][1]] == [True, True]
    world = World(answers=list(answers), repos=dict(repos))
    found = await discover(request(yes=True), world.deps())
    assert (found.source, found.approval) == ("stripe/stripe-cli", "yes_flag")
    assert not world.choices


async def test_a_same_name_package_that_does_not_fit_does_not_stop_web_search() -> None:
    unrelated = Probe(
        builder="npm",
        source="stripe-cli",
        downloads=150,
        version_count=6,
        description="A tiny placeholder package",
        executables=(),
    )
    world = World(probes=[unrelated], answers=[extract("stripe/stripe-cli")])
    world.repos["stripe/stripe-cli"] = STRIPE
    found = await discover(request(yes=True), world.deps())
    assert (found.stage, found.source, found.approval) == ("llm", "stripe/stripe-cli", "yes_flag")
    stage = [p for t, p in world.events if t == "discovery.stage" and p["stage"] == "ecosystem"]
    assert stage[0]["misfits"]["npm"] == [
        "it installs no executable",
        "its description is about something else ('A tiny placeholder package')",
    ]


async def test_without_web_search_a_misfit_is_only_offered() -> None:
    unrelated = Probe(builder="npm", source="stripe-cli", downloads=3, version_count=1)
    world = World(probes=[unrelated])
    with pytest.raises(DiscoveryConfirmationRequired) as exc:
        await discover(request(yes=True), world.deps())
    assert "1. npm:stripe-cli" in exc.value.message and "little used" in exc.value.message
    assert "npm install -g stripe-cli" in exc.value.hint


async def test_an_unverifiable_source_needs_a_person() -> None:
    limited = GitHubRateLimited(
        "GitHub API rate limit exceeded",
        url="https://api.github.com/repos/stripe/stripe-cli",
        retry_at=None,
    )
    world = World(answers=[extract("stripe/stripe-cli")], repos={"stripe/stripe-cli": limited})
    with pytest.raises(DiscoveryUnverified) as exc:
        await discover(request(yes=True), world.deps())
    assert exc.value.data["source"] == "stripe/stripe-cli"
    assert exc.value.exit_code == ExitCode.NETWORK


async def test_no_llm_configured_is_not_found_with_the_reason() -> None:
    world = World()
    with pytest.raises(DiscoveryNotFound) as exc:
        await discover(request(), world.deps())
    assert "no LLM is available for web search discovery" in exc.value.message
    assert world.last("discovery.stage") == {
        "tool": "stripe-cli",
        "stage": "llm",
        "outcome": "skipped",
        "ms": world.last("discovery.stage")["ms"],
        "reason": "no LLM is available for web search discovery",
    }
    failed = world.last("discovery.failed")
    assert (failed["stage"], failed["error_code"], failed["retryable"]) == (
        "llm",
        "discovery_not_found",
        False,
    )


async def test_an_unreachable_recipe_registry_is_said_not_passed_off_as_a_miss() -> None:
    world = World()

    async def down(_tool: str) -> str | None:
        raise RecipeRegistryUnreachable("cannot fetch the recipe manifest: HTTP 404")

    with pytest.raises(DiscoveryNotFound) as exc:
        await discover(request(), world.deps(recipe_lookup=down))
    msg = exc.value.message
    assert "in the registry" not in msg and "could not find stripe-cli in any ecosystem" in msg
    assert "the recipe registry could not be asked: cannot fetch the recipe manifest" in msg
    assert exc.value.data["registry_unreachable"].endswith("HTTP 404")
    assert "no LLM is available" in msg  # the rest of the story is still told


async def test_no_llm_flag_stops_before_the_llm() -> None:
    world = World(answers=[extract("stripe/stripe-cli")])
    with pytest.raises(DiscoveryNotFound, match="--no-llm"):
        await discover(request(llm=False), world.deps())
    assert world.llm_opened == []


async def test_an_llm_run_over_budget_is_a_budget_error() -> None:
    world = World(answers=[], budget_left=False)
    with pytest.raises(DiscoveryBudgetExceeded) as exc:
        await discover(request(yes=True), world.deps())
    assert exc.value.exit_code == ExitCode.BUDGET
    assert exc.value.data == {"left": 0.1}
    assert world.last("discovery.failed")["error_code"] == "discovery_budget"


# ---- the deadline, the name --------------------------------------------------------------


async def test_the_deadline_names_the_stage_it_cut(autojump_clock: trio.abc.Clock) -> None:
    world = World(probes=[probe("npm", 10)], probe_delay=60.0)
    with pytest.raises(DiscoveryTimeout) as exc:
        await discover(request(), world.deps(timeout_s=2.0))
    assert exc.value.message == (
        "discovery of stripe-cli did not finish within 2 s (during the ecosystem stage, "
        "last step: probing npm, PyPI, crates.io, RubyGems and Go)"
    )
    assert exc.value.data == {
        "stage": "ecosystem",
        "timeout_s": 2.0,
        "setting": "discover.timeout_s",
        "doing": "probing npm, PyPI, crates.io, RubyGems and Go",
    }
    assert "discover.timeout_s" in exc.value.hint
    assert world.last("discovery.failed")["stage"] == "ecosystem"


async def test_a_registry_that_does_not_answer_in_its_budget_is_passed_by(
    autojump_clock: trio.abc.Clock,
) -> None:
    """Refused connections retried past the registry's 5 s, or a hung server: the
    registry is a shortcut, so discovery says so and goes on to the web search."""
    world = World(answers=[extract("stripe/stripe-cli")], repos={"stripe/stripe-cli": STRIPE})

    async def hangs(_tool: str) -> str | None:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    deps = world.deps(recipe_lookup=hangs, timeout_s=60.0, stage_timeouts={"registry": 5.0})
    found = await discover(request(yes=True), deps)
    assert (found.stage, found.source) == ("llm", "stripe/stripe-cli")
    stage = [p for t, p in world.events if t == "discovery.stage" and p["stage"] == "registry"]
    assert stage[0]["outcome"] == "timeout"
    assert stage[0]["reason"].startswith("no answer within 5 s (")

    # Found nowhere: the message says the registry was not asked, not that it lacks it.
    world = World()
    with pytest.raises(DiscoveryNotFound) as exc:
        await discover(request(), world.deps(recipe_lookup=hangs, stage_timeouts={"registry": 5.0}))
    assert "the recipe registry could not be asked: no answer within 5 s" in exc.value.message


@dataclass
class Ledger:
    """What ``Confirmations`` records (the questions' answers)."""

    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def append(self, type_: str, payload: dict[str, Any], session: str | None) -> None:
        self.events.append((type_, payload))


async def test_a_person_who_takes_20_s_to_answer_inside_the_llm_stage_is_not_timed(
    autojump_clock: trio.abc.Clock,
) -> None:
    """The cost question is asked inside the LLM stage (15 s overall, 10 s for the LLM);
    the person answers after 20 s of (mock) time and discovery still finishes."""
    from tsukud.policy.confirm import Confirmations

    confirmations = Confirmations(Ledger())  # type: ignore[arg-type]
    world = World(answers=[extract("stripe/stripe-cli")], repos={"stripe/stripe-cli": STRIPE})
    opened = world.open_llm

    async def thinking_person(body: dict[str, Any]) -> None:
        async def answer() -> None:
            await trio.sleep(20)
            assert confirmations.answer(body["confirm"]["token"], True)

        nursery.start_soon(answer)

    @asynccontextmanager
    async def asks_the_cost_first(**kw: Any) -> AsyncIterator[FakeRun]:
        question = ConfirmationRequired("this run may cost up to $0.59", estimate_usd=0.59)
        await confirmations.ask(thinking_person, can_ask=True, session="s", question=question)
        async with opened(**kw) as run:
            yield run

    deps = world.deps(open_llm=asks_the_cost_first, timeout_s=15.0, stage_timeouts={"llm": 10.0})
    deps.clock = TrioClock()
    async with trio.open_nursery() as nursery:
        started = trio.current_time()
        found = await discover(request(yes=True), deps)
    assert found.source == "stripe/stripe-cli" and found.approval == "yes_flag"
    assert trio.current_time() - started >= 20
    assert found.waited_ms == 20_000 and found.duration_ms < 1_000


async def test_a_late_llm_stage_names_its_setting_and_what_it_was_doing(
    autojump_clock: trio.abc.Clock,
) -> None:
    world = World(answers=[extract("stripe/stripe-cli")], repos={"stripe/stripe-cli": STRIPE})
    opened = world.open_llm

    @asynccontextmanager
    async def slow(**kw: Any) -> AsyncIterator[FakeRun]:
        async with opened(**kw) as run:
            await trio.sleep(61)
            yield run

    deps = world.deps(open_llm=slow, timeout_s=90.0)
    with pytest.raises(DiscoveryTimeout) as exc:
        await discover(request(yes=True), deps)
    assert exc.value.message.startswith(
        "the llm stage of discovering stripe-cli did not finish within 60 s (during the llm stage"
    )
    assert exc.value.data["setting"] == "discover.llm_timeout_s"
    assert "tsukuctl config set discover.llm_timeout_s" in exc.value.hint


async def test_a_name_that_is_not_a_tool_name_is_refused() -> None:
    world = World()
    with pytest.raises(InvalidToolName) as exc:
        await discover(request("str\u0456pe-cli"), world.deps())  # a Cyrillic i
    assert exc.value.exit_code == ExitCode.USAGE
    assert world.events == [("discovery.failed", world.last("discovery.failed"))]


async def test_a_name_close_to_a_known_tool_is_never_recommended_without_a_choice() -> None:
    world = World(probes=[probe("npm", 10)])
    with pytest.raises(DiscoveryConfirmationRequired) as exc:
        await discover(request("ripgrap", yes=True), world.deps())
    warning = world.last("discovery.warning")
    assert (warning["kind"], warning["similar"]) == ("typosquat", "ripgrep")
    assert "not recommended: 'ripgrap' is 1 edit from the known tool 'ripgrep'" in (
        exc.value.message
    )
    world = World(probes=[probe("npm", 10)], picks=[1])
    found = await discover(request("ripgrap", can_ask=True), world.deps())
    assert (found.builder, found.approval) == ("npm", "user")
    assert any("ripgrep" in w for w in found.warnings)
