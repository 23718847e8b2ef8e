"""The registry and search fakes refuse what the real services refuse (and record it),
and serve a well-behaved client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.fakes.ecosystems import FakeEcosystems
from tests.fakes.search import FakeSearch
from tsukud.net.http import USER_AGENT


def fetch(url: str, headers: dict[str, str], data: bytes | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            return resp.status, bytes(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_crates_io_wants_a_user_agent_naming_the_client() -> None:
    with FakeEcosystems() as eco:
        eco.add_crate("rgx", recent_downloads=10)
        url = eco.base("crates.io") + "/api/v1/crates/rgx"
        status, body = fetch(url, {"User-Agent": "python-httpx/0.28"})
        assert status == 403 and "User-Agent" in json.loads(body)["errors"][0]["detail"]
        (refused,) = eco.take_violations()
        assert refused.request.headers["user-agent"] == "python-httpx/0.28"
        status, body = fetch(url, {"User-Agent": USER_AGENT})
        assert status == 200 and json.loads(body)["crate"]["name"] == "rgx"


@pytest.mark.parametrize(
    ("kind", "headers", "expected"),
    [
        ("tavily", {}, 401),
        ("tavily", {"Authorization": "Bearer tvly-key"}, 200),
        ("brave", {}, 422),
        ("brave", {"X-Subscription-Token": "brave-key"}, 200),
    ],
)
def test_paid_search_needs_its_key(kind: str, headers: dict[str, str], expected: int) -> None:
    with FakeSearch() as search:
        if kind == "tavily":
            url, data = search.env()["TSUKU_TAVILY_URL"], b'{"query": "rg"}'
        else:
            url, data = search.env()["TSUKU_BRAVE_URL"] + "?q=rg", None
        status, _body = fetch(url, {"Content-Type": "application/json", **headers}, data)
        assert status == expected
        assert len(search.take_violations()) == (0 if expected == 200 else 1)
