"""`tsukuctl search NAME` (issue 29, point 9): what is known of a name without money or
questions: its recipe, the packages of that exact name with their evidence, a known tool
it is a near miss of, and what `install` would do. No LLM is asked, nothing is spent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from tests.integration.discover.helpers import World, events, in_daemon
from tsukuctl.discover_commands import search_text
from tsukud.daemon import Daemon


async def search(d: Daemon, name: str) -> dict[str, Any]:
    """The service's answer as the client reads it off the wire."""
    answer: dict[str, Any] = json.loads(
        msgspec.json.encode(await d.services.discovery.search(name))
    )
    return answer


async def test_search_lists_packages_with_their_evidence_and_spends_nothing(
    world: World, home: Path
) -> None:
    world.eco.add_crate(
        "rgx", recent_downloads=5000, versions=9, repository="https://github.com/a/rgx"
    )
    world.eco.add_npm("rgx", weekly_downloads=3, versions=1)  # below npm's bar
    (home / "recipes").mkdir()
    (home / "recipes" / "stern.toml").write_text("[metadata]\nname = 'stern'\n")
    async with in_daemon(world.env(home, "claude")) as d:
        found = await search(d, "rgx")
        assert found["recipe"] is None and found["registry_entry"] is None
        by_from = {p["from"]: p for p in found["packages"]}
        assert set(by_from) == {"crates:rgx", "npm:rgx"}
        assert by_from["crates:rgx"]["passes_filter"] is True
        assert by_from["crates:rgx"]["repository"] == "a/rgx"
        assert by_from["npm:rgx"]["passes_filter"] is False
        assert "tsukuctl install rgx --from " in found["install_would"]
        text = search_text(found)
        assert "rgx: crates:rgx (5,000 downloads, github.com/a/rgx" in text
        assert "below discovery's bar" in text
        assert text.splitlines()[-1].startswith("tsukuctl install rgx would show these packages")

        mine = await search(d, "stern")
        assert mine["recipe"].startswith("local recipe ")
        assert mine["install_would"] == "install stern from its local recipe"

        near = await search(d, "stren")
        assert near["did_you_mean"] == "stern" and near["packages"] == []
        assert "web" in near["install_would"]  # the last resort, which asks first
        assert "did you mean stern? tsukuctl search stern" in search_text(near)
        assert [t for t, _p, _s in events(d) if t.startswith(("llm.", "budget."))] == []
    assert not world.claude.requests
