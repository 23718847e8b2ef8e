"""``tsukuctl eval discover`` against a real tsukud, the fake GitHub, the fake package
registries and search engines, and a fake model (real Anthropic SDK, the strict Messages
API) that answers from the known sources with known errors: the figures (accuracy with
its interval, latency beside the design's 10 s and the seed's 15 s, cost, how often a
person is asked and would accept, failure categories), the ledger's total as the fake's
bill, ``eval compare`` on discover runs, and a run stopped by ``--max-usd``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RETIRING, Tsuku, base_env, short_home
from tests.fakes.discovering_model import DiscoveringAnthropic
from tests.fakes.ecosystems import FakeEcosystems
from tests.fakes.github import FakeGitHub
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.search import FakeSearch
from tests.integration.create.helpers import CLAUDE_KEY
from tests.integration.discover.helpers import (
    local_searches_then_finds,
    set_repo,
    stripe_world,
)
from tests.integration.eval.helpers import events

# claude-sonnet-5-5's row in llm/prices.toml: USD per million tokens, per web search
INPUT_PRICE, OUTPUT_PRICE, SEARCH_PRICE = 2.0, 10.0, 0.01
PER_ITEM = (2400 * INPUT_PRICE + 180 * OUTPUT_PRICE) / 1e6 + SEARCH_PRICE  # $0.0166
# Ten tools of the builtin discovery corpus: their repositories on the fake GitHub.
TOOLS = {
    "age": "FiloSottile/age",
    "btop": "aristocratos/btop",
    "cosign": "sigstore/cosign",
    "helix": "helix-editor/helix",
    "k3d": "k3d-io/k3d",
    "k9s": "derailed/k9s",
    "kind": "kubernetes-sigs/kind",
    "kopia": "kopia/kopia",
    "stern": "stern/stern",
    "trivy": "aquasecurity/trivy",
}
PACKAGE = "jsonfmt-cli"  # a tool its npm package is: the registries' stage answers
WRONG, UNFOUND, DOUBLED = {"btop", "kind"}, {"k9s"}, {"kopia"}


def corpus(tmp: Path) -> Path:
    items = [{"tool": t, "source": f"github:{r}"} for t, r in TOOLS.items()]
    items.append({"tool": PACKAGE, "source": f"npm:{PACKAGE}"})
    (tmp / "corpus.json").write_text(json.dumps({"format": 1, "name": "eleven", "items": items}))
    return tmp


@pytest.fixture(scope="module")
def local() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[FakeGitHub, FakeEcosystems, FakeSearch]]:
    from tests.fakes.releases import FakeAsset, FakeRelease, FakeRepo
    from tsukud.recipe import host_platform

    plat = host_platform()
    with FakeGitHub() as github, FakeEcosystems() as eco, FakeSearch() as search:
        for tool, repo in TOOLS.items():
            asset = FakeAsset(f"{tool}_1.0.0_{plat.os}_{plat.arch}.tar.gz", b"\x1f\x8b" + b"0" * 64)
            github.add_repo(FakeRepo(repo, releases=[FakeRelease("v1.0.0", [asset])]))
            set_repo(github, repo, stars=1800, description=f"{tool}")  # popular, not a fork
        stripe_world(github)  # what the recorded search responses find
        set_repo(github, "stripe/stripe-cli")
        eco.add_npm(
            PACKAGE,
            weekly_downloads=250_000,
            versions=30,
            repository="https://github.com/jsonfmt/jsonfmt-cli",
            description="format JSON on the command line",
        )
        yield github, eco, search


@pytest.fixture
def model() -> Iterator[DiscoveringAnthropic]:
    with DiscoveringAnthropic(TOOLS, wrong=WRONG, unfound=UNFOUND, doubled=DOUBLED) as fake:
        yield fake


@pytest.fixture
def home(
    fakes: tuple[FakeGitHub, FakeEcosystems, FakeSearch],
    model: DiscoveringAnthropic,
    local: FakeOpenAI,
) -> Iterator[Tsuku]:
    github, eco, search = fakes
    path = short_home()
    t = Tsuku(
        path,
        {
            **base_env(path),
            **github.env(),
            **eco.env(),
            **search.env(),
            "ANTHROPIC_API_KEY": CLAUDE_KEY,
            "ANTHROPIC_BASE_URL": model.url,
            "TSUKU_OPENAI_BASE_URL": local.url,
            "TSUKU_SEARCH_BACKOFF": "0.01",
            "TSUKU_LLM_PROVIDER": "claude",
        },
    )
    try:
        yield t
    finally:
        RETIRING.retire(t)


def discover_json(t: Tsuku, *args: str) -> dict[str, Any]:
    cp = t.ctl("eval", "discover", "--yes", "--json", *args, timeout=120)
    assert cp.returncode == 0, cp.stderr
    res: dict[str, Any] = json.loads(cp.stdout)
    return res


def test_eval_discover_figures_ledger_max_usd_compare_and_a_local_model(
    home: Tsuku,
    model: DiscoveringAnthropic,
    local: FakeOpenAI,
    fakes: tuple[FakeGitHub, FakeEcosystems, FakeSearch],
    tmp_path: Path,
) -> None:
    """Eleven tools, the model wrong on two, finding nothing for one and naming two
    repositories for one: 7 of 11 right, every figure printed beside its target, every
    question counted where it is asked, and the ledger's total is the fake's bill. Then
    the model fixed, a run stopped by ``--max-usd`` (the figures of what it measured),
    and ``eval compare`` of the two. Last, a local model searching with the fake
    DuckDuckGo (the recorded search page) over the builtin corpus's ``stripe-cli``, the
    item the search fixtures name. (One daemon for all: its SDK import is seconds.)"""
    home.start()
    where = str(corpus(tmp_path))
    # No --yes and no one to ask: the worst case is refused before anything is spent.
    cp = home.ctl("eval", "discover", "--corpus", where)
    assert cp.returncode != 0 and "11 discoveries: at most $" in cp.stderr, cp.stderr
    assert model.replies == 0 and events(home, "eval.started") == []

    cp = home.ctl("eval", "discover", "--corpus", where, "--yes", timeout=120)
    assert cp.returncode == 0, cp.stderr
    for want in (
        "accuracy: 63.6 % (7 of 11 resolved to the known source), 95 % interval 35.4 % to "
        "84.8 % (Wilson)  [target ≥ 95.0 %]",
        "latency per tool: P50 ",
        "[target P95 < 10 s]",
        "web-search stage: P95 ",
        "over the 10 items that searched  [seed design: under 15 s]",
        "cost per tool: median $0.0166, P95 $0.0166, total $0.17  [target < $0.05]",
        # 9 search results and 1 package were proposed to a person; one was a choice
        "a person asked: 10 of 11 (90.9 %): confirm at llm 8, choice at llm 1, "
        "confirm at ecosystem 1",
        # 6 right search results, the package and the choice that offered the right one
        "confirmations accepted: 80.0 % (8 of 10)  [target ≥ 80.0 %]",
        "failures: wrong_source 2, not_found 1, ambiguous 1",
    ):
        assert want in cp.stdout, cp.stdout
    assert "[4/11] helix: right; a person would be asked (confirm at llm)" in cp.stderr
    first = cp.stdout.split()[1].rstrip(":")
    assert first.startswith("eval-")

    items = {e["payload"]["tool"]: e["payload"] for e in events(home, "eval.item", session=first)}
    assert items["btop"]["category"] == "wrong_source"
    assert items["btop"]["found"] == f"github:{model.other('btop')}"
    assert items["kopia"]["asked"] == "choice" and items["kopia"]["accepted"] is True
    assert items[PACKAGE]["stage"] == "ecosystem" and items[PACKAGE]["run_cost_usd"] == 0
    assert items["k9s"]["category"] == "not_found" and items["k9s"]["asked"] is None
    (started,) = events(home, "eval.started", session=first)
    assert started["payload"]["kind"] == "discover" and started["payload"]["prompt_version"]
    worst_one = started["payload"]["worst_case_usd"] / 11
    # Every dollar the ledger counts is one the fake billed.
    bill = model.bill_usd(INPUT_PRICE, OUTPUT_PRICE, SEARCH_PRICE)
    assert abs(bill - 10 * PER_ITEM) < 1e-9
    turns = events(home, "llm.turn")
    assert abs(sum(e["payload"]["cost_usd"] for e in turns) - bill) < 1e-9
    (done,) = events(home, "eval.completed", session=first)
    assert abs(done["payload"]["spent_usd"] - bill) < 1e-9 and done["payload"]["passed"] == 7

    # The model fixed; a cap that holds one discovery's reservation and three and a half
    # items' spending: the run stops before the fifth item, which would pass it.
    model.wrong.clear()
    model.unfound.clear()
    model.doubled.clear()
    cap = round(worst_one + 3.5 * PER_ITEM, 4)
    second = discover_json(home, "--corpus", where, "--max-usd", str(cap))
    assert second["reason"] == "max_usd" and second["spent_usd"] <= cap, second
    f = second["figures"]
    assert (f["items"], f["right"], f["failures"]) == (4, 4, {})
    assert abs(second["spent_usd"] - 4 * PER_ITEM) < 1e-9
    stopped = events(home, "eval.item", session=second["run"])[-1]["payload"]
    assert stopped["measured"] is False and stopped["tool"] == "k3d"

    cp = home.ctl("eval", "compare", first, second["run"])
    assert cp.returncode == 0, cp.stderr
    assert "accuracy: 63.6 % → 100.0 % (+36.4 points), p = " in cp.stdout, cp.stdout
    assert "latency P50: " in cp.stdout and "cost per right source: $" in cp.stdout
    assert (
        f"A: eval {first}: discovery, corpus eleven" in cp.stdout
        and "confirmations accepted" in cp.stdout
    )

    # A local model: its searches are DuckDuckGo's (the fake serving the recorded page).
    builtin = json.loads((Path(__file__).parents[3] / "tsukud/eval/discover.json").read_text())
    stripe = [i for i in builtin["items"] if i["tool"] == "stripe-cli"]
    one = tmp_path / "one"
    one.mkdir()
    (one / "corpus.json").write_text(json.dumps({"format": 1, "name": "one", "items": stripe}))
    local_searches_then_finds(local)
    _github, _eco, search = fakes
    asked = len(search.requests)
    local_only = ("--corpus", str(one), "--provider", "local", "--only-provider")
    res = discover_json(home, *local_only, "--search-provider", "ddg")
    assert (res["provider"], res["figures"]["right"], res["figures"]["items"]) == ("local", 1, 1)
    assert [r.route for r in search.requests[asked:]] == ["/html/"]
    assert res["figures"]["asked_by"] == {"confirm at llm": 1}
    # a local model and DuckDuckGo cost nothing, and that is a known price
    assert (res["figures"]["cost_total_usd"], res["figures"]["unpriced"]) == (0.0, 0)

    # The model down for the whole item (it always answers 503): an outage, named and
    # never scored as discovery's miss; the run goes on (here: it had one item).
    for _ in range(20):
        local.error(503, "overloaded", headers={"retry-after": "0"})
    cp = home.ctl("eval", "discover", *local_only, "--search-provider", "ddg", "--yes")
    assert cp.returncode == 0, cp.stderr
    assert "stripe-cli: outage, not scored: " in cp.stdout, cp.stdout
    down = cp.stdout.split()[1].rstrip(":")
    (item,) = [e["payload"] for e in events(home, "eval.item", session=down)]
    assert (item["measured"], item["category"]) == (False, "outage")
    (done,) = events(home, "eval.completed", session=down)
    assert done["payload"]["measured"] == 0
