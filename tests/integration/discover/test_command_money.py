"""Money is asked about once per command (issue 33, item 10), end to end: one
``tsukuctl install foo`` runs discovery (a web search that costs) and then the
instructions builder; each run alone stays under ``llm.confirm_threshold``, the command
does not, so the person is asked once, shown the command's total."""

from __future__ import annotations

import shutil
from decimal import Decimal

import pytest

from tests.conftest import Tsuku
from tests.fakes import anthropic_server as anth
from tests.integration.discover.helpers import REVIEW, World, answers, claude_finds, page_found
from tests.integration.discover.test_discover_e2e import (  # noqa: F401
    daemon,
    ledger,
    on_a_terminal,
    tk,
)
from tsukuctl import render
from tsukud.errors import ExitCode
from tsukud.testing.download_host import FakeDownloadHost

THRESHOLD = "0.35"


@pytest.mark.slow  # discovery + instructions builder + container; money units stay
def test_discovery_then_the_instructions_builder_is_asked_once_with_the_commands_total(
    world: World,
) -> None:
    with FakeDownloadHost() as vendor:
        page = vendor.add("/foo/install", b"<p>Download foo from this page.</p>")
        claude_finds(
            world.claude,
            {
                "builder": "instructions",
                "source": page,
                "confidence": 90,
                "evidence": [f"{page} is foo's official download page"],
                "reasoning": "foo has no GitHub releases; its vendor documents a download.",
            },
            results=[(page, "Download foo")],
            # a long search turn: about $0.23 of the discovery run's reservation
            usage=anth.usage(90_000, 3_000, web_searches=1),
        )
        with daemon(world, TSUKU_LLM_CONFIRM_THRESHOLD=THRESHOLD) as t:
            code, screen, stdout = on_a_terminal(
                t, ["install", "foo"], [(b"[y/N] ", b"n\n")], timeout=120
            )
            assert code == ExitCode.USER_DECLINED, screen
            (reserved,) = ledger(t, "budget.reserved")  # discovery's; the builder's was asked
            discovery = Decimal(str(reserved["payload"]["amount_usd"]))
            (asked,) = ledger(t, "confirmation.requested")  # once, for the command
            instructions = Decimal(str(asked["payload"]["amount_usd"]))
            assert asked["payload"]["purpose"] == "instructions"
            threshold = Decimal(THRESHOLD)
            assert discovery < threshold and instructions < threshold  # each run alone: under
            (settled,) = ledger(t, "budget.settled")
            spent = Decimal(str(settled["payload"]["actual_usd"]))
            total = spent + instructions
            assert total > threshold  # the command: over
            assert f"this command may cost up to ${total:.2f} in all" in screen
            assert f"its earlier steps spent or hold ${spent:.4f}" in screen
            assert f"above the confirmation threshold of ${threshold:.2f}" in screen
            assert screen.count("[y/N]") == 1
            assert len(world.claude.requests) == 1  # the builder's model was never called
            assert not (t.home / "bin" / "foo").exists()
            assert "installed" not in stdout


@pytest.mark.slow  # discovery + instructions builder + container; money units stay
@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_the_preview_cost_line_counts_every_paid_call(
    world: World,
    tk: Tsuku,  # noqa: F811
) -> None:
    """Discovery's search and the page-reading call cost money; the recipe is then
    written by npm's deterministic builder: the preview's cost line is not "$0"."""
    from tsukud.testing.packages import npm_tarball

    with FakeDownloadHost() as vendor:
        world.eco.publish_npm(npm_tarball("@fake/foo", "2.0.0", {"foo": "foo 2.0.0"}))
        page = vendor.add(
            "/foo/install", b"<p>Install it with npm:</p><pre>npm install -g @fake/foo</pre>"
        )
        page_found(world, page)
        answers(
            world,
            {
                "kind": "ecosystem",
                "summary": "an npm package",
                "ecosystem": {"manager": "npm", "package": "@fake/foo"},
            },
        )
        # A page found by web search names a package no repository names: the person
        # accepts it first (issue 33 item 3), then sees the review with the cost line.
        code, screen, _ = on_a_terminal(
            tk, ["install", "foo"], [(b"? [y/N] ", b"y\n"), (REVIEW, b"c\n")], timeout=180
        )
        assert code == ExitCode.USER_DECLINED, screen
        settled = [Decimal(str(e["payload"]["actual_usd"])) for e in ledger(tk, "budget.settled")]
        assert len(settled) == 2 and all(settled)  # discovery's and the page reading's
        total = render.money(float(sum(settled)))
        assert (
            f"cost {total} in all for this command's paid calls (the recipe itself: "
            "deterministic matcher, no LLM)" in screen
        ), screen
        assert "cost $0 (deterministic matcher, no LLM)" not in screen
