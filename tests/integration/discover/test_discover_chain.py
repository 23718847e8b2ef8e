"""The discovery chain in a real in-process daemon (ledger, budget, breakers, confirmation
service, real provider SDKs) against the fake world on loopback."""

from __future__ import annotations

import importlib
import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.fakes import openai_server as oai
from tests.fakes.search import ddg_page
from tests.integration.discover.helpers import (
    CANARIES,
    INJECTION,
    STRIPE_URL,
    World,
    answering,
    claude_finds,
    discovery_entry,
    events,
    extract_args,
    gemini2_two_steps,
    gemini3_finds,
    in_daemon,
    local_searches_then_finds,
    repo_missing,
    set_repo,
)
from tsukud.discover.errors import (
    DiscoveryAmbiguous,
    DiscoveryBudgetExceeded,
    DiscoveryConfirmationRequired,
    DiscoveryDenied,
    DiscoveryNotFound,
    DiscoverySearchFailed,
    DiscoveryTimeout,
    DiscoveryUnverified,
)
from tsukud.errors import ConfirmationRequired


async def run(d: Any, tool: str = "stripe-cli", progress: Any = None, **kw: Any) -> Any:
    async def quiet(_body: dict[str, Any]) -> None:
        return None

    svc = d.services.discovery
    return await svc.discover(tool, progress=progress or quiet, **kw)


def no_secrets(d: Any, home: Path) -> None:
    data = (home / "tsuku.db").read_bytes()
    for key in CANARIES:
        assert key.encode() not in data
    for _t, payload, _s in events(d):
        text = json.dumps(payload)
        assert not any(k in text for k in CANARIES)


# --------------------------------------------------------------------------- providers


async def test_claude_server_search_finds_verifies_and_charges(world: World, home: Path) -> None:
    claude_finds(world.claude)
    async with in_daemon(world.env(home, "claude")) as d:
        found = await run(d, yes=True)
        assert (found.stage, found.builder, found.source) == ("llm", "github", "stripe/stripe-cli")
        assert found.approval == "yes_flag" and found.confidence == 95
        assert found.metadata["stars"] == 1800 and found.metadata["owner_type"] == "Organization"
        assert found.sources == (STRIPE_URL,)
        assert found.provider == "claude" and found.searches == 1 and found.llm_turns == 1
        # 2400 in at $2/M + 180 out at $10/M + one search at $0.01
        assert found.spent_usd == pytest.approx(0.0048 + 0.0018 + 0.01)

        (req,) = world.claude.requests
        body = req.json()
        tools = {t["name"]: t for t in body["tools"]}
        assert tools["web_search"]["type"] == "web_search_20250305"
        assert tools["web_search"]["max_uses"] == 3
        assert tools["extract_source"]["input_schema"]["properties"]["builder"]["enum"] == [
            "github",
            "instructions",
            "crates.io",
            "pypi",
            "npm",
            "rubygems",
            "go",
        ]
        assert "untrusted web content" in body["system"]

        kinds = [t for t, _p, s in events(d) if s == found.session]
        assert kinds[0] == "discovery.started" and kinds[-1] == "discovery.completed"
        for k in (
            "discovery.stage",
            "discovery.candidate",
            "discovery.verified",
            "llm.turn",
            "budget.reserved",
            "budget.settled",
        ):
            assert k in kinds, k
        (turn,) = [p for t, p, _s in events(d, "llm.turn")]
        assert turn["web_search_requests"] == 1 and turn["purpose"] == "discovery"
        assert turn["cost_usd"] == pytest.approx(0.0166)
        (settled,) = [p for t, p, _s in events(d, "budget.settled")]
        assert settled["actual_usd"] == pytest.approx(0.0166)
        stages = {p["stage"]: p["outcome"] for t, p, _s in events(d, "discovery.stage")}
        assert stages == {
            "registry": "miss",
            "ecosystem": "miss",
            "llm": "candidates",
            "verify": "selected",
        }
        no_secrets(d, home)


async def test_gemini3_grounding_and_functions_in_one_request(world: World, home: Path) -> None:
    gemini3_finds(world.gemini)
    async with in_daemon(world.env(home, "gemini")) as d:
        found = await run(d, yes=True)
        assert found.source == "stripe/stripe-cli" and found.provider == "gemini"
    (req,) = world.gemini.requests
    body = req.json()
    kinds = [next(iter(t)) for t in body["tools"]]
    assert sorted(kinds) == ["functionDeclarations", "googleSearch"]
    assert body["toolConfig"]["includeServerSideToolInvocations"] is True


async def test_gemini_grounding_sources_are_shown_as_seen_in_search_results(
    world: World, home: Path
) -> None:
    """Gemini's grounding URLs are redirects that name no repository; the answer
    segment Google grounded in a chunk does, so that chunk is shown as a search result
    that names the repository, and no "no search result links to it" warning."""
    from tests.fakes import gemini_server as gem
    from tests.integration.discover.helpers import Sink

    redirect = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AUZ"
    said = "The official Stripe CLI repository is github.com/stripe/stripe-cli."
    world.gemini.reply(
        [
            gem.text(said),
            gem.function_call(
                "extract_source", extract_args("stripe/stripe-cli"), signature="c2ln"
            ),
        ],
        usage_=gem.usage(900, 60),
        grounding={
            "webSearchQueries": ["stripe-cli official github repository"],
            "groundingChunks": [
                {"web": {"uri": redirect + "1", "title": "github.com"}},
                {"web": {"uri": redirect + "2", "title": "stripe.com"}},
            ],
            "groundingSupports": [
                {
                    "segment": {"startIndex": 0, "endIndex": len(said), "text": said},
                    "groundingChunkIndices": [0],
                }
            ],
        },
    )
    async with in_daemon(world.env(home, "gemini")) as d:
        # first the cost (Gemini 3's per-query search fees take the worst case past the
        # question threshold), then the source
        sink = Sink(answers=[True, True])
        found = await run(d, progress=await answering(d, sink), can_ask=True)
    assert found.provider == "gemini" and found.sources == (redirect + "1",)
    cost, q = sink.questions
    assert "$" in cost["message"] and "Seen in search results" not in cost["message"]
    assert f"Seen in search results:\n    - {redirect}1  (github.com)\n" in q["message"]
    assert "stripe.com" not in q["message"]  # grounds nothing that names the repository
    assert "none of the search results" not in q["message"]


async def test_gemini2_searches_then_extracts_in_two_requests(world: World, home: Path) -> None:
    gemini2_two_steps(world.gemini)
    env = world.env(home, "gemini", TSUKU_GEMINI_MODEL="gemini-2.5-flash")
    async with in_daemon(env) as d:
        found = await run(d, yes=True)
        assert found.source == "stripe/stripe-cli" and found.llm_turns == 2
        turns = [p for t, p, _s in events(d, "llm.turn")]
        assert turns[0]["grounded_prompts"] == 1 and turns[1]["grounded_prompts"] == 0
        # the grounded prompt costs $0.035 on gemini-2.5-flash
        assert turns[0]["cost_usd"] > 0.035
    first, second = (r.json() for r in world.gemini.requests)
    assert [next(iter(t)) for t in first["tools"]] == ["googleSearch"]
    assert "toolConfig" not in first
    assert [next(iter(t)) for t in second["tools"]] == ["functionDeclarations"]
    assert second["toolConfig"]["functionCallingConfig"]["mode"] == "ANY"
    assert "<search_findings>" in json.dumps(second["contents"])


async def test_local_model_searches_duckduckgo_through_rate_limits(
    world: World, home: Path
) -> None:
    world.search.ddg_statuses[:] = [202, 202]
    local_searches_then_finds(world.local)
    async with in_daemon(world.env(home, "local")) as d:
        found = await run(d, yes=True)
        assert found.source == "stripe/stripe-cli" and found.searches == 1
        (search,) = [p for t, p, _s in events(d, "discovery.search") if t == "discovery.search"]
        reservation = search.pop("reservation")
        assert reservation and search == {
            "tool": "stripe-cli",
            "provider": "ddg",
            "ok": True,
            "results": 3,
            "attempts": 3,
            "search": 1,
        }
        assert not events(d, "discovery.search_started")  # a free search needs no write-ahead
    posts = world.search.searches("ddg")
    assert len(posts) == 3 and all(r.method == "POST" for r in posts)
    assert posts[0].headers["user-agent"].startswith("Mozilla/5.0")
    assert posts[0].headers["content-type"] == "application/x-www-form-urlencoded"
    assert world.search.query_of(posts[0]) == "stripe-cli github"
    # the model saw sanitised, labelled results
    tool_msg = next(m for m in world.local.requests[1].json()["messages"] if m["role"] == "tool")
    assert "Untrusted web content" in tool_msg["content"] and STRIPE_URL in tool_msg["content"]


async def test_duckduckgo_rate_limit_exhausted_is_a_retryable_search_error(
    world: World, home: Path
) -> None:
    world.search.ddg_statuses[:] = [202] * 4
    world.local.reply(
        None, [oai.tool_call("c1", "web_search", {"query": "stripe-cli"})], "tool_calls"
    )
    world.local.reply("I could not search the web, so I cannot tell.")
    async with in_daemon(world.env(home, "local")) as d:
        with pytest.raises(DiscoverySearchFailed) as exc:
            await run(d, yes=True)
        assert exc.value.retryable and exc.value.exit_code == 5
        assert "202" in exc.value.message and "TAVILY_API_KEY" in exc.value.hint
        (failed,) = [p for t, p, _s in events(d, "discovery.failed")]
        assert failed["error_code"] == "discovery_search_failed" and failed["retryable"]
    assert len(world.search.searches("ddg")) == 4  # 3 retries, then it gives up


@pytest.mark.parametrize("provider", ["tavily", "brave"])
async def test_keyed_search_providers_are_charged(world: World, home: Path, provider: str) -> None:
    from tests.integration.discover.helpers import BRAVE_KEY, TAVILY_KEY

    local_searches_then_finds(world.local)
    keys = {"TAVILY_API_KEY": TAVILY_KEY, "BRAVE_API_KEY": BRAVE_KEY}
    async with in_daemon(world.env(home, "local", **keys)) as d:
        found = await run(d, yes=True, search_provider=provider)
        assert found.source == "stripe/stripe-cli"
        (ahead,) = [p for t, p, _s in events(d, "discovery.search_started")]
        (search,) = [p for t, p, _s in events(d, "discovery.search") if t == "discovery.search"]
        fee = 0.008 if provider == "tavily" else 0.005
        assert search["provider"] == provider and search["cost_usd"] == pytest.approx(fee)
        assert "estimated" not in search  # answered: billed, not a guess
        # Written ahead with its fee, and answered under the same reservation and number.
        assert ahead["worst_case_usd"] == pytest.approx(fee) and ahead["provider"] == provider
        assert (ahead["reservation"], ahead["search"]) == (search["reservation"], 1)
        (settled,) = [p for t, p, _s in events(d, "budget.settled")]
        assert settled["actual_usd"] == pytest.approx(fee)  # local tokens are free
        no_secrets(d, home)
    (req,) = world.search.searches(provider)
    if provider == "tavily":
        assert req.headers["authorization"] == f"Bearer {TAVILY_KEY}"
        assert req.json()["query"] == "stripe-cli github"
    else:
        assert req.headers["x-subscription-token"] == BRAVE_KEY
        assert "q=stripe-cli+github" in req.path


def paid_search_events(d: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The one paid search's write-ahead and its outcome, in that order in the ledger."""
    rows = [(t, p) for t, p, _s in events(d, "discovery.search")]
    assert [t for t, _p in rows] == ["discovery.search_started", "discovery.search"], rows
    (_t1, ahead), (_t2, search) = rows
    assert (ahead["reservation"], ahead["search"]) == (search["reservation"], search["search"])
    return ahead, search


def money_of_the_run(d: Any) -> tuple[float, float]:
    """The run's terminal ``spent_usd`` and its reservation's settlement."""
    (failed,) = [p for t, p, _s in events(d, "discovery.failed")]
    (settled,) = [p for t, p, _s in events(d, "budget.settled")]
    return failed["spent_usd"], settled["actual_usd"]


async def test_a_paid_search_that_fails_after_it_was_sent_is_charged_estimated(
    world: World, home: Path
) -> None:
    from tests.integration.discover.helpers import TAVILY_KEY

    world.search.tavily_statuses[:] = [500] * 4  # every attempt reaches Tavily and fails
    world.local.reply(
        None, [oai.tool_call("c1", "web_search", {"query": "stripe-cli"})], "tool_calls"
    )
    world.local.reply("I could not search the web, so I cannot tell.")
    async with in_daemon(world.env(home, "local", TAVILY_API_KEY=TAVILY_KEY)) as d:
        with pytest.raises(DiscoverySearchFailed):
            await run(d, yes=True, search_provider="tavily")
        ahead, search = paid_search_events(d)
        assert ahead["worst_case_usd"] == pytest.approx(0.008)
        assert search["ok"] is False and "HTTP 500" in search["error"]
        # Sent, so possibly billed, and no answer said so: the fee, marked estimated.
        # One search is one fee, however many attempts its retries took.
        assert search["estimated"] is True and search["reason"] == "failed"
        assert search["cost_usd"] == pytest.approx(0.008)
        assert money_of_the_run(d) == (pytest.approx(0.008), pytest.approx(0.008))
    assert len(world.search.searches("tavily")) == 4


async def test_a_paid_search_that_never_left_is_not_charged(world: World, home: Path) -> None:
    from tests.integration.discover.helpers import TAVILY_KEY

    with socket.socket() as s:  # a loopback port nothing listens on: no connection
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/search"
    world.local.reply(
        None, [oai.tool_call("c1", "web_search", {"query": "stripe-cli"})], "tool_calls"
    )
    world.local.reply("I could not search the web, so I cannot tell.")
    env = world.env(home, "local", TAVILY_API_KEY=TAVILY_KEY, TSUKU_TAVILY_URL=closed)
    async with in_daemon(env) as d:
        with pytest.raises(DiscoverySearchFailed):
            await run(d, yes=True, search_provider="tavily")
        ahead, search = paid_search_events(d)
        assert ahead["worst_case_usd"] == pytest.approx(0.008)  # the fee was held for it
        assert search["ok"] is False and "cost_usd" not in search and "estimated" not in search
        assert money_of_the_run(d) == (0.0, 0.0)


@pytest.mark.slow  # real-time deadlines; the other chain tests stay
async def test_a_paid_search_cut_off_by_the_deadline_is_charged_estimated(
    world: World, home: Path
) -> None:
    from tests.integration.discover.helpers import TAVILY_KEY

    importlib.import_module("tsukud.llm.openai_compat")  # its import is not the deadline's
    world.search.delay = 30.0  # Tavily holds its answer past the deadline
    local_searches_then_finds(world.local)
    env = world.env(home, "local", TAVILY_API_KEY=TAVILY_KEY, TSUKU_DISCOVER_TIMEOUT="4")
    async with in_daemon(env) as d:
        with pytest.raises(DiscoveryTimeout):
            await run(d, yes=True, search_provider="tavily")
        assert len(world.search.searches("tavily")) == 1  # the query was sent
        ahead, search = paid_search_events(d)
        assert search["ok"] is False and search["reason"] == "cancelled"
        assert search["estimated"] is True and search["cost_usd"] == pytest.approx(0.008)
        assert ahead["worst_case_usd"] == pytest.approx(0.008)
        # The run's terminal event and its settlement carry the fee.
        assert money_of_the_run(d) == (pytest.approx(0.008), pytest.approx(0.008))
        (failed,) = [p for t, p, _s in events(d, "discovery.failed")]
        assert failed["error_code"] == "discovery_timeout"


# ---------------------------------------------------------------- injection and the gate


def injection_results() -> list[tuple[str, str]]:
    return [
        ("https://stripe-cli-mirror.example/download", "Stripe CLI download"),
        (STRIPE_URL, "Stripe CLI - GitHub"),
    ]


@pytest.mark.parametrize(
    ("evil", "expected"),
    [
        ({"stars": 3, "created_at": "2026-11-20T00:00:00Z"}, "3 stars (fewer than 50)"),
        (None, "does not exist on GitHub"),
        ({"archived": True, "stars": 5000}, "archived"),
    ],
)
async def test_injected_source_with_few_stars_missing_or_archived_is_rejected(
    world: World, home: Path, evil: dict[str, Any] | None, expected: str
) -> None:
    if evil is None:
        repo_missing(world.github, "evil/stripe-cli")
    else:
        set_repo(world.github, "evil/stripe-cli", **evil)
    claude_finds(world.claude, extract_args("evil/stripe-cli", 100), results=injection_results())
    async with in_daemon(world.env(home, "claude")) as d:
        # A repository below the bar is only ever a choice for a person (--yes never
        # picks it); one that does not exist or is archived is not even that.
        below_bar = evil is not None and not evil.get("archived")
        error = DiscoveryConfirmationRequired if below_bar else DiscoveryNotFound
        with pytest.raises(error) as exc:
            await run(d, yes=True)
        assert expected in exc.value.message and "evil/stripe-cli" in exc.value.message
        if below_bar:
            assert "1. github:evil/stripe-cli" in exc.value.message
            assert "not recommended: 3 stars (fewer than 50)" in exc.value.message
        else:
            assert "--from github:owner/repo" in exc.value.hint
        assert not [e for e in events(d, "discovery.completed")]


async def test_injected_fork_is_never_auto_approved_and_the_parent_is_named(
    world: World, home: Path
) -> None:
    set_repo(
        world.github,
        "evil/stripe-cli",
        stars=2,
        fork=True,
        parent=("stripe/stripe-cli", 1800),
        owner_type="User",
    )
    claude_finds(world.claude, extract_args("evil/stripe-cli", 100), results=injection_results())
    sink_progress: list[dict[str, Any]] = []

    async def progress(body: dict[str, Any]) -> None:
        sink_progress.append(body)

    async with in_daemon(world.env(home, "claude")) as d:
        with pytest.raises(DiscoveryConfirmationRequired) as exc:
            await run(d, progress=progress, yes=True)  # --yes, no terminal
        assert "it is a fork" in exc.value.message
        assert "--from github:stripe/stripe-cli" in exc.value.hint
    shown = "\n".join(str(p.get("message")) for p in sink_progress)
    assert "FORK of stripe/stripe-cli" in shown and "Owner:        evil (User)" in shown


async def test_injection_loses_to_the_verified_source(world: World, home: Path) -> None:
    set_repo(world.github, "evil/stripe-cli", stars=4)
    claude_finds(
        world.claude,
        extract_args("evil/stripe-cli", 100),
        extract_args("stripe/stripe-cli", 90),
        results=injection_results(),
    )
    async with in_daemon(world.env(home, "claude")) as d:
        found = await run(d, yes=True)
        assert found.source == "stripe/stripe-cli" and found.approval == "yes_flag"
        assert found.rejected == (
            {
                "source": "evil/stripe-cli",
                "reason": "4 stars (fewer than 50) and no ecosystem package of this "
                "repository passes its download bar",
            },
        )


async def test_rate_limited_github_leaves_candidates_unverified(world: World, home: Path) -> None:
    world.github.clear_overrides()
    world.github.rate_limit_remaining = 0
    claude_finds(world.claude)
    async with in_daemon(world.env(home, "claude")) as d:
        with pytest.raises(DiscoveryUnverified) as exc:
            await run(d, yes=True)
        assert exc.value.retryable and "GITHUB_TOKEN" in exc.value.hint
        assert "never approved automatically" in exc.value.hint


async def test_prompt_injection_through_duckduckgo_for_a_local_model(
    world: World, home: Path
) -> None:
    """The search page carries the injection; the (scripted, fooled) model extracts the
    impostor; verification refuses it."""
    world.search.ddg_html = ddg_page(
        [
            (
                "https://evil.example/stripe",
                "Stripe CLI <b>official</b>",
                f"<!-- x -->{INJECTION}\u200b<script>steal()</script>",
            ),
            (STRIPE_URL, "Stripe CLI - GitHub", "A command-line tool for Stripe."),
        ]
    ).encode()
    set_repo(world.github, "evil/stripe-cli", stars=1, created_at="2026-11-21T00:00:00Z")
    local_searches_then_finds(
        world.local, extract_args("evil/stripe-cli", 100, ["the page said so"])
    )
    async with in_daemon(world.env(home, "local")) as d:
        with pytest.raises(DiscoveryConfirmationRequired) as exc:  # --yes never picks it
            await run(d, yes=True)
        assert "evil/stripe-cli" in exc.value.message and "1 stars" in exc.value.message
        (verified,) = [p for t, p, _s in events(d, "discovery.verified")]
        assert verified["status"] == "rejected"
        assert "none of the search results" in " ".join(verified["warnings"])
    shown = next(m for m in world.local.requests[1].json()["messages"] if m["role"] == "tool")
    text = shown["content"]
    assert "<script>" not in text and "<!--" not in text and "\u200b" not in text
    assert "Untrusted web content" in text and "ignore previous instructions" in text


async def test_hidden_page_elements_never_reach_the_model(world: World, home: Path) -> None:
    """Text a browser hides (inline display:none / visibility:hidden, ``hidden``,
    aria-hidden, <template>, comments) is stripped before the local model's prompt."""
    hidden = [
        f'<span style="display: none">{INJECTION} (1)</span>',
        f'<span style="visibility:hidden">{INJECTION} (2)</span>',
        f"<span hidden>{INJECTION} (3)</span>",
        f'<span aria-hidden="true">{INJECTION} (4)</span>',
        f"&lt;template&gt;{INJECTION} (5)&lt;/template&gt;",  # escaped markup, decoded once
        f"&lt;!-- {INJECTION} (6) --&gt;",
    ]
    world.search.ddg_html = ddg_page(
        [(STRIPE_URL, "Stripe CLI - GitHub", "The official Stripe CLI. " + "".join(hidden))]
    ).encode()
    local_searches_then_finds(world.local)
    async with in_daemon(world.env(home, "local")) as d:
        found = await run(d, yes=True)
        assert found.source == "stripe/stripe-cli"
    prompt = json.dumps(world.local.requests[1].json()["messages"])
    assert "The official Stripe CLI." in prompt
    assert "ignore previous instructions" not in prompt and "evil/stripe-cli" not in prompt


async def test_every_discovery_tool_call_is_a_tool_called_event_and_a_stat(
    world: World, home: Path
) -> None:
    claude_finds(world.claude)  # one server search, one extract_source
    local_searches_then_finds(world.local)  # one client-side web_search, one extract_source
    async with in_daemon(world.env(home, "claude")) as d:
        found = await run(d, yes=True, collect_tool_stats=True)
        assert found.tool_stats is not None
        assert [(c["name"], c["ok"], c.get("query")) for c in found.tool_stats] == [
            ("web_search", True, "stripe-cli github"),  # Claude's server_tool_use block
            ("extract_source", True, "stripe/stripe-cli"),
        ]
        assert found.tool_stats[0]["duration_ms"] == 0  # inside the turn
        logged = [p for t, p, _s in events(d, "tool.called")]
        assert logged == list(found.tool_stats)
        assert set(logged[0]) <= {
            "name",
            "ok",
            "duration_ms",
            "query",
            "path",
            "asset",
            "bytes",
            "error_type",
        }
        claude_finds(world.claude)
        assert (await run(d, yes=True)).tool_stats is None  # only when asked
    async with in_daemon(world.env(home, "local")) as d:
        found = await run(d, yes=True, collect_tool_stats=True)
        search, extract = found.tool_stats
        assert (search["name"], search["ok"], search["query"]) == (
            "web_search",
            True,
            "stripe-cli github",
        )
        assert search["bytes"] > 100 and extract["name"] == "extract_source"


async def test_gemini_grounding_searches_are_tool_calls(world: World, home: Path) -> None:
    gemini3_finds(world.gemini)
    async with in_daemon(world.env(home, "gemini")) as d:
        found = await run(d, yes=True, collect_tool_stats=True)
        assert [c["name"] for c in found.tool_stats] == ["google_search", "extract_source"]


# ---------------------------------------------------------------------------- ecosystems


async def test_single_ecosystem_match_prints_its_install_command(world: World, home: Path) -> None:
    world.eco.add_crate(
        "rgx", recent_downloads=5000, versions=9, repository="https://github.com/a/rgx"
    )
    world.eco.add_npm("rgx", weekly_downloads=3, versions=1)  # below npm's bar
    async with in_daemon(world.env(home, "claude")) as d:
        found = await run(d, "rgx", yes=True)
        assert (found.stage, found.builder, found.install_command) == (
            "ecosystem",
            "crates.io",
            "cargo install rgx",
        )
        assert found.metadata["selection"] == "single_match"
        (stage,) = [p for t, p, _s in events(d, "discovery.stage") if p["stage"] == "ecosystem"]
        assert stage["rejected"] == {"npm": "downloads 3 < 100 and version count 1 < 5"}
    assert not world.claude.requests  # no LLM was asked
    paths = world.eco.paths()
    for part in (
        "/crates/api/v1/crates/rgx",
        "/npm/rgx",
        "/npm-api/downloads/point/last-week/rgx",
        "/pypi-org/pypi/rgx/json",
        "/rubygems/api/v1/gems/rgx.json",
        "/goproxy/rgx/@latest",
    ):
        assert part in paths, part


async def test_ecosystem_ties_are_a_numbered_choice_and_an_error_without_a_terminal(
    world: World, home: Path
) -> None:
    world.eco.add_crate("dup", recent_downloads=9000, versions=9)
    world.eco.add_npm(
        "dup", weekly_downloads=8000, versions=20, repository="https://github.com/x/dup"
    )
    async with in_daemon(world.env(home, "claude")) as d:
        with pytest.raises(DiscoveryAmbiguous) as exc:
            await run(d, "dup", yes=True)  # --yes never picks among ties
        assert exc.value.exit_code == 10
        assert (
            "1. crates.io:dup  (9.0K downloads in 90 days, 9 versions, first published "
            "2020-01-01, NO repository)" in exc.value.message
        )
        assert (
            "2. npm:dup  (8.0K weekly downloads, 20 versions, first published 2024-01-01, "
            "repository x/dup, by someone)" in exc.value.message
        )
        for way in (
            "--from crates:dup" if "crates.io" in _prefixes() else "cargo install dup",
            "tsukuctl install dup --from npm:dup",
        ):
            assert way in exc.value.hint, way
        assert [c["kind"] for c in exc.value.data["choices"]] == ["crates.io", "npm"]

        from tests.integration.discover.helpers import Sink

        sink = Sink(picks=[2])
        found = await run(d, "dup", progress=await answering(d, sink), can_ask=True)
        assert (found.stage, found.builder, found.approval) == ("ecosystem", "npm", "user")
        (question,) = sink.questions
        assert (
            "Discovery found 2 possible sources for dup; 2 packages in different"
            in (question["message"])
        )
        assert question["question"] == "Which source should tsuku use for dup?"
    assert not world.claude.requests  # ties are asked about, not searched further


def _prefixes() -> dict[str, str]:
    from tsukud.flows.install_missing import BUILDER_SOURCES

    return BUILDER_SOURCES


async def test_a_same_name_unrelated_npm_package_does_not_stop_web_search(
    world: World, home: Path
) -> None:
    world.eco.add_npm(
        "stripe-cli",
        weekly_downloads=150,
        versions=6,
        description="Placeholder: reserved package name",
        bin=False,
    )
    claude_finds(world.claude)
    async with in_daemon(world.env(home, "claude")) as d:
        found = await run(d, yes=True)
        assert (found.stage, found.source, found.approval) == (
            "llm",
            "stripe/stripe-cli",
            "yes_flag",
        )
        (stage,) = [p for t, p, _s in events(d, "discovery.stage") if p["stage"] == "ecosystem"]
        assert stage["outcome"] == "miss" and stage["matches"] == ["npm:stripe-cli"]
        assert "it installs no executable" in stage["misfits"]["npm"]
    assert len(world.claude.requests) == 1  # web search ran


def npm_extract(package: str = "prettyfmt", confidence: int = 92) -> dict[str, Any]:
    return {
        "builder": "npm",
        "source": package,
        "confidence": confidence,
        "evidence": [f"https://prettyfmt.dev/install says: npm install -g {package}"],
        "reasoning": "The project's install page installs the CLI from npm.",
    }


NPM_PAGE = [("https://prettyfmt.dev/install", "Install prettyfmt: npm install -g prettyfmt")]


@pytest.mark.parametrize("provider", ["claude", "gemini"])
async def test_a_model_names_an_npm_package_and_the_npm_probe_verifies_it(
    world: World, home: Path, provider: str
) -> None:
    """Web search says ``npm install -g prettyfmt``; the model (through the real SDK)
    calls extract_source with builder npm; npm's registry is asked about that package
    and it passes: the answer is npm:prettyfmt, approved by --yes like a GitHub hit."""
    world.eco.add_npm(
        "prettyfmt",
        weekly_downloads=40_000,
        versions=12,
        description="prettyfmt: a code formatter command",
        repository="https://github.com/fmt/prettyfmt",
    )
    if provider == "claude":
        claude_finds(world.claude, npm_extract(), results=NPM_PAGE)
    else:
        gemini3_finds(world.gemini, npm_extract())
    async with in_daemon(world.env(home, provider)) as d:
        found = await run(d, "prettyfmt-cli", yes=True)
        assert (found.stage, found.builder, found.source, found.approval) == (
            "llm",
            "npm",
            "prettyfmt",
            "yes_flag",
        )
        assert found.install_command == "npm install -g prettyfmt"
        assert found.metadata["downloads"] == 40_000 and found.metadata["version_count"] == 12
        (cand,) = [p for _t, p, _s in events(d, "discovery.candidate")]
        assert (cand["builder"], cand["source"]) == ("npm", "prettyfmt")
        stages = {p["stage"]: p["outcome"] for _t, p, _s in events(d, "discovery.stage")}
        assert stages["ecosystem"] == "miss" and stages["verify"] == "selected"
    assert "/npm/prettyfmt" in world.eco.paths()  # the probe of the package it named
    assert not [p for p in world.eco.paths() if p.startswith("/github")]
    fake = world.claude if provider == "claude" else world.gemini
    (req,) = fake.requests
    assert "npm" in json.dumps(req.json())  # the schema offered the ecosystem builders


async def test_a_package_the_model_names_with_no_repository_or_use_is_never_taken_by_yes(
    world: World, home: Path
) -> None:
    """A model (one that obeys injected text, say) naming a package is no more an
    identity than the typed name: ``fmtq``, five versions, no downloads, no repository,
    is shown with its evidence and needs a person; ``--yes`` does not take it."""
    world.eco.add_npm("fmtq", weekly_downloads=0, versions=5, description="a formatter CLI")
    claude_finds(world.claude, npm_extract("fmtq"), results=NPM_PAGE)
    async with in_daemon(world.env(home, "claude")) as d:
        with pytest.raises(DiscoveryConfirmationRequired) as exc:
            await run(d, "prettyfmt-cli", yes=True)
        assert "npm:fmtq" in exc.value.message
        assert "--from npm:fmtq" in exc.value.hint


async def test_a_package_the_model_names_that_npm_does_not_know_is_not_used(
    world: World, home: Path
) -> None:
    claude_finds(world.claude, npm_extract("prettyfmt-impostor"), results=NPM_PAGE)
    async with in_daemon(world.env(home, "claude")) as d:
        with pytest.raises(DiscoveryNotFound) as exc:
            await run(d, "prettyfmt-cli", yes=True)
    assert "npm:prettyfmt-impostor: there is no npm package named prettyfmt-impostor" in (
        exc.value.message
    )


async def test_unreachable_ecosystems_are_named_when_nothing_is_found(
    world: World, home: Path
) -> None:
    for builder in ("crates.io", "npm", "pypi"):
        world.eco.fail[builder] = 503
    env = world.env(home)
    del env["TSUKU_LLM_PROVIDER"]
    async with in_daemon(env) as d:
        with pytest.raises(DiscoveryNotFound) as exc:
            await run(d, "stripe-cli")
    assert "could not find stripe-cli in the registry or any ecosystem" in exc.value.message
    assert "(crates.io, npm, pypi could not be reached, so stripe-cli may be there)" in (
        exc.value.message
    )
    assert exc.value.data["unreachable"] == ["crates.io", "npm", "pypi"]


async def test_a_near_miss_package_is_never_recommended_after_the_typosquat_warning(
    world: World, home: Path
) -> None:
    """``install sterm`` (``stern`` is known): the PyPI package named sterm is offered as
    a choice nobody recommends, never installed on --yes."""
    (home / "recipes").mkdir()
    (home / "recipes" / "stern.toml").write_text("[metadata]\nname = 'stern'\n")
    world.eco.add_pypi("sterm", releases=10, summary="Serial terminal")
    async with in_daemon(world.env(home, "claude")) as d:
        with pytest.raises(DiscoveryConfirmationRequired) as exc:
            await run(d, "sterm", yes=True)
        assert "1. pypi:sterm" in exc.value.message
        assert "not recommended: 'sterm' is 1 edit from the known tool 'stern'" in (
            exc.value.message
        )
        assert "tsukuctl install sterm --from pypi:sterm" in exc.value.hint
    assert not world.claude.requests


async def test_a_slow_registry_does_not_hold_the_others(world: World, home: Path) -> None:
    world.eco.add_pypi("slowpoke", releases=10)
    world.eco.delay["crates.io"] = 3.0
    env = world.env(home, "claude", TSUKU_DISCOVER_ECOSYSTEM_TIMEOUT="0.5")
    async with in_daemon(env) as d:
        started = time.monotonic()
        found = await run(d, "slowpoke", confirm=False)  # a report: no one is asked
        assert time.monotonic() - started < 2.0
        assert found.builder == "pypi" and found.install_command == "pipx install slowpoke"
        # PyPI reports no downloads and slowpoke names no repository: only a name
        assert any("found by its name alone" in w for w in found.warnings)
        (stage,) = [p for t, p, _s in events(d, "discovery.stage") if p["stage"] == "ecosystem"]
        assert stage["late"] == ["crates.io"]


# ----------------------------------------------------------------------------- registry


async def test_discovery_entry_is_found_and_cached(world: World, home: Path) -> None:
    discovery_entry(
        world.github,
        "batx",
        {"builder": "github", "source": "sharkdp/bat", "description": "A cat(1) clone with wings."},
    )
    discovery_entry(world.github, "boostx", {"builder": "homebrew", "source": "boost"})
    async with in_daemon(world.env(home, "claude")) as d:
        found = await run(d, "batx")
        assert (found.stage, found.builder, found.source) == ("registry", "github", "sharkdp/bat")
        assert found.approval == "trusted" and found.metadata["description"].startswith("A cat")
        again = await run(d, "batx")
        assert again.source == "sharkdp/bat"
        brew = await run(d, "boostx")
        assert brew.install_command == "brew install boost"
    hits = world.github.requests_to("/registry/recipes/discovery/b/ba/batx.json")
    assert len(hits) == 1  # the second lookup came from $TSUKU_HOME/registry/discovery
    assert (home / "registry" / "discovery" / "b" / "ba" / "batx.json").is_file()


# ----------------------------------------------------------------- time, money, questions


async def test_discovery_deadline_with_a_slow_model(world: World, home: Path) -> None:
    importlib.import_module("tsukud.llm.claude")
    claude_finds(world.claude, delay=30.0)
    env = world.env(home, "claude", TSUKU_DISCOVER_TIMEOUT="3")
    async with in_daemon(env) as d:
        started = time.monotonic()
        with pytest.raises(DiscoveryTimeout) as exc:
            await run(d, yes=True)
        took = time.monotonic() - started
        # The request must have been sent when the deadline strikes: the SDK is imported
        # ahead (its first import, seconds on a busy machine, counts as machine time).
        # Well before the model would answer (30 s); unwinding may take seconds when busy.
        assert 2.9 < took < 12.0
        assert exc.value.retryable and "during the llm stage" in exc.value.message
        assert "discover.timeout_s" in exc.value.hint
        (failed,) = [p for t, p, _s in events(d, "discovery.failed")]
        assert failed["error_code"] == "discovery_timeout" and failed["retryable"]
        # The request was sent and its usage never came: charged at its worst case,
        # marked estimated, never as $0.
        (cut,) = [p for t, p, _s in events(d, "llm.cut_off")]
        assert cut["estimated"] is True and cut["reason"] == "cancelled"
        (settled,) = [p for t, p, _s in events(d, "budget.settled")]
        assert settled["actual_usd"] == pytest.approx(cut["cost_usd"]) and cut["cost_usd"] > 0


async def test_the_llm_stage_has_its_own_budget(world: World, home: Path) -> None:
    claude_finds(world.claude, delay=10.0)
    env = world.env(home, "claude", TSUKU_DISCOVER_LLM_TIMEOUT="1")
    async with in_daemon(env) as d:
        assert d.services.config()["discover.llm_timeout_s"] == 1.0
        started = time.monotonic()
        with pytest.raises(DiscoveryTimeout) as exc:
            await run(d, yes=True)
        assert 0.9 < time.monotonic() - started < 3.0
        assert exc.value.message.startswith(
            "the llm stage of discovering stripe-cli did not finish within 1 s"
        )
        assert "last step: asking claude" in exc.value.message
        assert "discover.llm_timeout_s" in exc.value.hint


def test_default_budgets_fit_a_real_web_search_conversation() -> None:
    from tsukud import config as configmod

    c = configmod.resolve(env={})
    assert c["discover.llm_timeout_s"] == 60.0  # five turns with server searches
    stages = c["discover.llm_timeout_s"] + c["discover.ecosystem_timeout_s"]
    assert c["discover.timeout_s"] >= stages + c["discover.registry_timeout_s"]


@pytest.mark.slow  # real-time deadlines; the other chain tests stay
async def test_the_cost_question_inside_the_llm_stage_pauses_the_deadline(
    world: World, home: Path
) -> None:
    """The daemon's own confirmation service, its cost question inside the LLM stage, a
    person who answers after 5 s against a 3 s deadline (the issue's 20 s against 15 s,
    scaled): discovery still finishes, and its duration is the machine's only. (A first
    run with --yes, asked nothing, takes the SDK's first import out of the timed one.)"""
    claude_finds(world.claude)
    claude_finds(world.claude)
    env = world.env(
        home,
        "claude",
        TSUKU_DISCOVER_TIMEOUT="3",
        TSUKU_DISCOVER_LLM_TIMEOUT="3",
        TSUKU_LLM_CONFIRM_THRESHOLD="0.0001",
    )
    async with in_daemon(world.env(home, "claude")) as d:
        await run(d, yes=True, confirm=False)  # the SDK's first import: seconds when busy
    async with in_daemon(env) as d:
        asked: list[str] = []

        async def slow_person(body: dict[str, Any]) -> None:
            question = body.get("confirm")
            if isinstance(question, dict):
                asked.append(question["question"])

                async def answer() -> None:
                    await trio.sleep(5)
                    d.services.confirmations.answer(question["token"], True)

                d.nursery.start_soon(answer)

        started = time.monotonic()
        found = await run(d, progress=slow_person, can_ask=True, confirm=False)
        assert time.monotonic() - started > 5
        assert asked == ["Continue?"]  # the cost question, inside the deadline
        assert found.source == "stripe/stripe-cli"
        assert found.waited_ms >= 5000 and found.duration_ms < 3000


async def test_budget_is_checked_before_any_call(world: World, home: Path) -> None:
    env = world.env(home, "claude", TSUKU_LLM_DAILY_BUDGET="0.001")
    async with in_daemon(env) as d:
        with pytest.raises(DiscoveryBudgetExceeded) as exc:
            await run(d, yes=True)
        assert exc.value.exit_code == 23 and not exc.value.retryable
        assert "llm.daily_budget" in exc.value.hint
    assert not world.claude.requests


async def test_the_question_shows_the_metadata_and_yes_or_no_decides(
    world: World, home: Path
) -> None:
    from tests.integration.discover.helpers import Sink

    claude_finds(world.claude)
    claude_finds(world.claude)
    async with in_daemon(world.env(home, "claude")) as d:
        sink = Sink(answers=[True])
        found = await run(d, progress=await answering(d, sink), can_ask=True)
        assert found.approval == "user"
        (q,) = sink.questions
        assert q["question"] == "Install stripe-cli from this source?"
        for part in (
            "Source:       github:stripe/stripe-cli",
            "Stars:        1,800",
            "Created:      7 years ago (2019-03-21)",
            "Owner:        stripe (Organization)",
            "Confidence:   95/100",
            "Evidence (from the model):",
            f"Seen in search results:\n    - {STRIPE_URL}  (Stripe CLI - GitHub)",
            "found by an LLM's web search",
        ):
            assert part in q["message"], part
        assert q["discovery"]["repo"] == "stripe/stripe-cli"
        sink = Sink(answers=[False])
        with pytest.raises(DiscoveryDenied) as exc:
            await run(d, progress=await answering(d, sink), can_ask=True)
        assert exc.value.exit_code == 13
        answers = [t for t, _p, _s in events(d, "confirmation.")]
        assert answers == ["confirmation.granted", "confirmation.declined"]


async def test_a_repository_without_release_assets_is_reported_before_the_question(
    world: World, home: Path
) -> None:
    from tests.integration.discover.helpers import Sink

    set_repo(world.github, "acme/docs-only", stars=900, description="A CLI built from source")
    claude_finds(world.claude, extract_args("acme/docs-only"))
    claude_finds(world.claude, extract_args("acme/docs-only"))
    async with in_daemon(world.env(home, "claude")) as d:
        with pytest.raises(DiscoveryConfirmationRequired) as exc:  # --yes does not approve it
            await run(d, "docs-only", yes=True)
        assert "needs a person's approval: it has no release asset for linux/" in (
            exc.value.message
        )
        sink = Sink(answers=[False])
        with pytest.raises(DiscoveryDenied):
            await run(d, "docs-only", progress=await answering(d, sink), can_ask=True)
        (q,) = sink.questions
        assert "! it has no GitHub releases: installing it on linux/" in q["message"]
        assert "will need the instructions builder" in q["message"]
        assert q["discovery"]["release"]["installable"] is False
        verified = [p for t, p, _s in events(d, "discovery.verified")]
        assert verified[-1]["release"]["installable"] is False
    claude_finds(world.claude)
    async with in_daemon(world.env(home, "claude")) as d:
        found = await run(d, yes=True)  # stripe/stripe-cli publishes linux and mac builds
        assert found.metadata["release"]["installable"] is True
        assert found.metadata["release"]["tag"] == "v1.22.0"


async def test_without_terminal_or_yes_the_error_suggests_both(world: World, home: Path) -> None:
    claude_finds(world.claude)
    async with in_daemon(world.env(home, "claude")) as d:
        with pytest.raises(DiscoveryConfirmationRequired) as exc:
            await run(d)
        assert exc.value.exit_code == 12
        assert "--yes" in exc.value.hint and "--from github:stripe/stripe-cli" in exc.value.hint


async def test_without_any_llm_the_hint_says_how_to_enable_web_search(
    world: World, home: Path
) -> None:
    env = world.env(home)
    del env["TSUKU_LLM_PROVIDER"]
    async with in_daemon(env) as d:
        with pytest.raises(DiscoveryNotFound) as exc:
            await run(d, "nothing-here")
        assert "ANTHROPIC_API_KEY" in exc.value.hint and exc.value.exit_code == 3
        assert "Did you mean" not in exc.value.hint

    # A near miss of a known tool: the way to install that tool comes first, before
    # keys or --from (issue 29, point 3).
    (home / "recipes").mkdir()
    (home / "recipes" / "ripgrep.toml").write_text("[metadata]\nname = 'ripgrep'\n")
    async with in_daemon(env) as d:
        with pytest.raises(DiscoveryNotFound) as exc:
            await run(d, "ripgrp")
        assert exc.value.hint.startswith("Did you mean ripgrep? `tsukuctl install ripgrep`. ")
        assert exc.value.data["did_you_mean"] == "ripgrep"


async def test_typosquat_warning(world: World, home: Path) -> None:
    (home / "recipes").mkdir()
    (home / "recipes" / "stripe-cli.toml").write_text("[metadata]\nname = 'stripe-cli'\n")
    claude_finds(world.claude)
    claude_finds(world.claude)
    async with in_daemon(world.env(home, "claude")) as d:
        # A near miss of a known tool is never approved by --yes: a person decides.
        with pytest.raises(DiscoveryConfirmationRequired) as exc:
            await run(d, "strpe-cli", yes=True)
        assert "'strpe-cli' is 1 edit from the known tool 'stripe-cli'" in exc.value.message
        found = await run(d, "strpe-cli", yes=True, confirm=False)  # discover: a report
        assert found.metadata["auto_approvable"] is False
        assert any(
            "'strpe-cli' is 1 edit away from the known tool 'stripe-cli'" in w
            for w in found.warnings
        )
        warning = [p for t, p, _s in events(d, "discovery.warning")][-1]
        assert warning == {
            "tool": "strpe-cli",
            "kind": "typosquat",
            "similar": "stripe-cli",
            "distance": 1,
        }


async def test_an_install_page_for_a_near_miss_name_says_so(world: World, home: Path) -> None:
    """An install page found for ``sterm`` while ``stern`` is known: the page is still
    only ever used after a person reviews the recipe read from it, and that review
    is told the name is a near miss."""
    (home / "recipes").mkdir()
    (home / "recipes" / "stern.toml").write_text("[metadata]\nname = 'stern'\n")
    page = "https://sterm.example.test/install"
    claude_finds(
        world.claude,
        {
            "builder": "instructions",
            "source": page,
            "confidence": 90,
            "evidence": [f"{page} is sterm's download page"],
            "reasoning": "sterm has no GitHub releases; its vendor documents a download.",
        },
        results=[(page, "Download sterm")],
    )
    async with in_daemon(world.env(home, "claude")) as d:
        found = await run(d, "sterm", yes=True, confirm=False)
        assert (found.builder, found.source) == ("instructions", page)
        near = "'sterm' is 1 edit from the known tool 'stern'"
        assert found.metadata["near_miss"] == near
        assert f"{near}: check it is the tool you meant" in found.reason


async def test_a_failing_provider_hands_over_to_the_next(world: World, home: Path) -> None:
    world.claude.error(529, "overloaded_error", "Overloaded")
    gemini3_finds(world.gemini)
    async with in_daemon(world.env(home, "claude", "gemini")) as d:
        found = await run(d, yes=True)
        assert found.provider == "gemini" and found.source == "stripe/stripe-cli"
        (failed,) = [p for t, p, _s in events(d, "discovery.provider_failed")]
        assert failed["provider"] == "claude"
        (stage,) = [p for t, p, _s in events(d, "discovery.stage") if p["stage"] == "llm"]
        assert stage["provider_errors"] and stage["provider_errors"][0].startswith("claude:")


async def test_a_rejected_key_fails_over_and_discovery_keeps_the_key_hint(
    world: World, home: Path
) -> None:
    world.claude.error(401, "authentication_error", "invalid x-api-key")
    gemini3_finds(world.gemini)
    async with in_daemon(world.env(home, "claude", "gemini")) as d:
        found = await run(d, yes=True)
        assert found.provider == "gemini" and found.source == "stripe/stripe-cli"
        assert any("ANTHROPIC_API_KEY" in w for w in found.warnings), found.warnings


async def test_claude_search_failure_is_a_search_error(world: World, home: Path) -> None:
    from tests.fakes import anthropic_server as anth

    world.claude.reply(
        [
            anth.server_tool_use("srvtoolu_01", "stripe-cli"),
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_01",
                "content": {
                    "type": "web_search_tool_result_error",
                    "error_code": "too_many_requests",
                },
            },
            anth.text("The search failed, so I cannot say."),
        ],
        usage_=anth.usage(500, 20, web_searches=1),
    )
    async with in_daemon(world.env(home, "claude")) as d:
        with pytest.raises(DiscoverySearchFailed) as exc:
            await run(d, yes=True)
        assert "too_many_requests" in exc.value.message and exc.value.retryable
        assert "claude's own web search failed" in exc.value.hint


# ------------------------------------------------------------------- worst-case reservation


def _tool_messages(request: Any) -> int:
    return sum(1 for m in request.json()["messages"] if m["role"] == "tool")


def _searches_three_times_then_finds(request: Any) -> Any:
    """A local model that uses every search it is allowed (3), then extracts: whatever
    the interleaving of concurrent discoveries, each conversation gets its own answer."""
    from tests.fakes.http import Reply

    if _tool_messages(request) < 3:
        call = oai.tool_call("c", "web_search", {"query": "stripe-cli github"})
    else:
        call = oai.tool_call("c", "extract_source", extract_args("stripe/stripe-cli"))
    return Reply(json=oai.completion(None, [call], "tool_calls"))


async def test_twenty_concurrent_discoveries_never_overspend_with_search_fees(
    world: World, home: Path
) -> None:
    """Local tokens are free, Tavily queries are not: the reservation covers the three
    searches a discovery may pay for, so a budget that fits three discoveries admits
    three, and what is spent, search fees included, stays within it."""
    import trio

    from tests.integration.discover.helpers import TAVILY_KEY

    fee, budget = 0.008, 0.08  # worst case 3 x $0.008 = $0.024: three fit, four do not
    world.local.fallback = _searches_three_times_then_finds
    env = world.env(home, "local", TAVILY_API_KEY=TAVILY_KEY, TSUKU_LLM_DAILY_BUDGET=str(budget))
    found: list[Any] = []
    refused: list[DiscoveryBudgetExceeded] = []
    try:
        async with in_daemon(env) as d:

            async def one() -> None:
                try:
                    found.append(await run(d, yes=True, search_provider="tavily"))
                except DiscoveryBudgetExceeded as exc:
                    refused.append(exc)

            async with trio.open_nursery() as nursery:
                for _ in range(20):
                    nursery.start_soon(one)
            reserved = [p["amount_usd"] for t, p, _s in events(d, "budget.reserved")]
            settled = [p["actual_usd"] for t, p, _s in events(d, "budget.settled")]
            fees = [
                p["cost_usd"]
                for t, p, _s in events(d, "discovery.search")
                if t == "discovery.search"
            ]
    finally:
        world.local.fallback = None
    assert len(found) == 3 and len(refused) == 17
    assert all(f.source == "stripe/stripe-cli" and f.searches == 3 for f in found)
    assert reserved == [pytest.approx(3 * fee)] * 3
    assert fees == [pytest.approx(fee)] * 9
    assert sum(settled) == pytest.approx(sum(fees)) and sum(settled) <= budget
    assert len(world.search.searches("tavily")) == 9


CLAUDE_WORST = 5 * (20_000 * 2 + 1024 * 10) / 1e6 + 7 * 0.01  # claude-sonnet-5-5
# gemini-3.8-flash: Gemini 3 bills each search query ($0.014); a grounded request is
# bounded at GROUNDED_QUERIES_BOUND (10) queries, since nothing caps them.
GEMINI_WORST = 5 * (20_000 * 0.75 + 1024 * 3.75) / 1e6 + 5 * 10 * 0.014


@pytest.mark.parametrize(
    ("providers", "expected"),
    [
        (("claude",), CLAUDE_WORST),
        (("gemini",), GEMINI_WORST),
        (("claude", "gemini"), CLAUDE_WORST + GEMINI_WORST),
    ],
)
async def test_reservation_covers_search_and_grounding_fees_on_every_provider(
    world: World, home: Path, providers: tuple[str, ...], expected: float
) -> None:
    """Claude: 5 turns and every search it may make (max_uses stays >= 1, so 3 + 4);
    Gemini 3: 5 turns and 5 grounded prompts of at most 10 billed queries each; both:
    the sum, since a failover starts the discovery over on the next provider."""
    if providers[0] == "claude":
        claude_finds(world.claude)
    else:
        gemini3_finds(world.gemini)
    async with in_daemon(world.env(home, *providers)) as d:
        await run(d, yes=True)
        (reserved,) = [p for t, p, _s in events(d, "budget.reserved")]
    assert reserved["amount_usd"] == pytest.approx(expected, abs=1e-6)


async def test_an_unknown_grounding_fee_is_not_counted_as_zero(world: World, home: Path) -> None:
    prices = home / "prices.toml"
    prices.write_text(
        '[[price]]\nmodel = "gemini-3.8-flash"\ninput = "0.75"\noutput = "3.75"\nper_search = "0"\n'
    )
    env = world.env(home, "gemini", TSUKU_LLM_PRICES_FILE=str(prices))
    async with in_daemon(env) as d:
        with pytest.raises(ConfirmationRequired) as exc:
            await run(d)
        assert "price of gemini-3.8-flash grounded prompts is unknown" in exc.value.message
    assert not world.gemini.requests
