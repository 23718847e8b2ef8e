"""A name is not an identity (issue 33, item 2), end to end through the real daemon and
client on the fake registries: a package found only because its name is the typed name
is a candidate shown with its evidence (downloads, first publish, repository, who
publishes it); one with no repository or negligible use is taken only by a person's
explicit choice (``--yes`` never takes it; ``--from npm:<name>`` names it); a popular
same-name tool with a repository is still accepted by a person's yes."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import Tsuku
from tests.integration.discover.helpers import World
from tests.integration.discover.test_discover_e2e import (  # noqa: F401
    ledger,
    on_a_terminal,
    tk,
)
from tsukud.testing.packages import npm_tarball

TARBALL = "/npm/fmtq/-/fmtq-1.4.0.tgz"


def publish_fmtq(world: World) -> None:
    """npm's ``fmtq``: five versions, 0 weekly downloads, no repository (anyone could
    have published it under the name a person types)."""
    for v in ("1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0"):
        world.eco.publish_npm(npm_tarball("fmtq", v, {"fmtq": f"fmtq {v}"}))
    doc = world.eco.npm["fmtq"]
    doc["description"] = "A fast formatter CLI"
    doc["maintainers"] = [{"name": "mallory", "email": "m@example.invalid"}]
    doc["time"]["created"] = "2026-11-20T00:00:00.000Z"
    world.eco.npm_downloads["fmtq"] = 0


def nothing_fetched_or_installed(world: World, t: Tsuku) -> None:
    assert not [r for r in world.eco.paths() if r.endswith(".tgz")], world.eco.paths()
    assert not (t.home / "recipes" / "fmtq.toml").exists()
    assert not (t.home / "bin" / "fmtq").exists()
    assert not ledger(t, "validation.*")


def test_yes_never_takes_a_package_found_by_its_name_alone(
    world: World,
    tk: Tsuku,  # noqa: F811
) -> None:
    publish_fmtq(world)
    cp = tk.ctl("install", "fmtq", "--yes", timeout=120)
    assert cp.returncode == 12, (cp.stdout, cp.stderr)
    err = cp.stderr
    assert "the only clear match" not in cp.stdout + err
    for part in (
        "npm:fmtq has the name fmtq, and nothing else speaks for it",
        "0 weekly downloads, 5 versions, first published 2026-11-20, NO repository, by mallory",
        "found by its name alone: it names no source repository; negligible use "
        "(0 weekly downloads, under 100)",
        "hint: Run it on a terminal to choose, or name the one you mean: "
        "tsukuctl install fmtq --from npm:fmtq",
    ):
        assert part in err, part
    nothing_fetched_or_installed(world, tk)
    (failed,) = ledger(tk, "discovery.failed")
    assert failed["payload"]["error_code"] == "discovery_confirmation_required"


@pytest.mark.parametrize("yes", [False, True])
def test_on_a_terminal_it_is_a_choice_shown_with_its_evidence(
    world: World,
    tk: Tsuku,  # noqa: F811
    yes: bool,
) -> None:
    """Not "the only clear match": a numbered choice of one, recommended by nothing, with
    its evidence; picking none installs nothing. ``--yes`` does not answer it."""
    publish_fmtq(world)
    args = ["install", "fmtq", *(["--yes"] if yes else [])]
    code, screen, stdout = on_a_terminal(tk, args, [(b"for none]", b"0\n")], timeout=60)
    assert code == 13, screen
    for part in (
        "Discovery found 1 possible source for fmtq; npm:fmtq has the name fmtq",
        "1. npm:fmtq  (0 weekly downloads, 5 versions, first published 2026-11-20, "
        "NO repository, by mallory)",
        "not recommended: found by its name alone: it names no source repository",
        "Which source should tsuku use for fmtq? [1-1, 0 or Enter for none]",
    ):
        assert part in screen, part
    assert "discovered" not in stdout
    nothing_fetched_or_installed(world, tk)


def test_a_popular_same_name_tool_with_a_repository_is_a_candidate_a_yes_accepts(
    world: World,
    tk: Tsuku,  # noqa: F811
) -> None:
    """The question shows the evidence; a person's no installs nothing (and ``--yes``
    accepts it: ``test_install_an_npm_package_without_a_recipe``)."""
    for v in ("1.0.0", "1.1.0", "1.2.0"):
        world.eco.publish_npm(npm_tarball("prettyfmt", v, {"prettyfmt": f"prettyfmt {v}"}))
    doc = world.eco.npm["prettyfmt"]
    doc["repository"] = {"type": "git", "url": "git+https://github.com/fmt/prettyfmt.git"}
    doc["maintainers"] = [{"name": "fmt-team", "email": "t@example.invalid"}]
    doc["time"]["created"] = "2019-05-01T00:00:00.000Z"
    world.eco.npm_downloads["prettyfmt"] = 50_000
    code, screen, _ = on_a_terminal(tk, ["install", "prettyfmt"], [(b"[y/N]", b"n\n")])
    assert code == 13, screen
    for part in (
        "Found a package named prettyfmt on npm: prettyfmt",
        "Downloads:       50,000 weekly downloads",
        "First published: 2019-05-01",
        "Repository:      https://github.com/fmt/prettyfmt",
        "Published by:    fmt-team",
        "anyone can publish a package under any free name",
        "Install prettyfmt from this source? [y/N]",
    ):
        assert part in screen, part
    assert "the only clear match" not in screen
    assert not [r for r in world.eco.paths() if r.endswith(".tgz")]
    (declined,) = ledger(tk, "confirmation.declined")
    assert declined["payload"]["discovery"]["repository"] == "fmt/prettyfmt"


@pytest.mark.slow  # a real npm install; its siblings here stay
@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_from_is_the_explicit_choice_and_is_not_called_discovered(
    world: World,
    tk: Tsuku,  # noqa: F811
) -> None:
    publish_fmtq(world)
    cp = tk.ctl("install", "fmtq", "--from", "npm:fmtq", "--yes", timeout=180)
    assert cp.returncode == 0, cp.stderr
    assert "source of fmtq: npm:fmtq (named with --from)" in cp.stdout
    assert "discovered" not in cp.stdout
    assert "the only clear match" not in cp.stdout + cp.stderr
    assert "installed fmtq 1.4.0 (fmtq)" in cp.stdout
    assert not ledger(tk, "discovery.started")
    assert json.loads(tk.ctl("list", "--json", check=True).stdout.splitlines()[0])
