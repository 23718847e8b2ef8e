"""Discovery's ``instructions`` result: a model that finds only a vendor's install page
names it (builder ``instructions``), the chain hands it on without a GitHub check (the
recipe read from it is validated and reviewed later), and a malformed page URL goes back
to the model as an error it can correct."""

from __future__ import annotations

import msgspec
import pytest

from tests.unit.discover.test_chain import STRIPE, World, extract, request
from tsukud.discover.chain import discover
from tsukud.discover.llm_discovery import ExtractError, parse_extract
from tsukud.llm.types import ToolCall

PAGE = "https://foo.example.test/download"


def page_answer(url: str = PAGE) -> object:
    response = extract("unused/unused")
    call = ToolCall(
        id="call-1",
        name="extract_source",
        arguments={
            "builder": "instructions",
            "source": url,
            "confidence": 85,
            "evidence": [f"{url} documents a tarball download"],
            "reasoning": "no GitHub releases; the vendor hosts the builds",
        },
    )
    return msgspec.structs.replace(
        response, message=msgspec.structs.replace(response.message, parts=(call,))
    )


async def test_an_install_page_is_an_instructions_result_with_no_github_check() -> None:
    world = World(answers=[page_answer()])  # type: ignore[list-item]
    found = await discover(request(tool="foo", yes=True), world.deps())
    assert (found.stage, found.builder, found.source) == ("llm", "instructions", PAGE)
    assert found.confidence == 85 and found.provider == "claude"
    assert found.spent_usd == 0.012
    assert "discovery.verified" not in world.types()  # nothing to check on GitHub
    assert world.last("discovery.completed")["builder"] == "instructions"
    assert world.questions == []  # the recipe read from the page is what gets reviewed


async def test_a_repository_wins_over_a_page_in_the_same_answer() -> None:
    world = World(answers=[extract("stripe/stripe-cli")], repos={"stripe/stripe-cli": STRIPE})
    found = await discover(request(yes=True), world.deps())
    assert found.builder == "github"


def test_a_page_must_be_a_plain_http_url() -> None:
    args = {"builder": "instructions", "confidence": 80, "evidence": [], "reasoning": ""}
    for bad in ("ftp://x.test/a", "https://user:pw@x.test/", "not a url", "https://x.test/a b"):
        with pytest.raises(ExtractError):
            parse_extract({**args, "source": bad}, seen=set())
    ok = parse_extract({**args, "source": PAGE}, seen=set())
    assert (ok.builder, ok.source) == ("instructions", PAGE)
