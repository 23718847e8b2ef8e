"""``tsukuctl plan --json`` through the daemon is tsuku's format-5 plan to the byte for
tsuku's fields (names, order, nesting: what ``tests/unit/recipe/test_tsuku_plans.py``
compares against tsuku's golden plans), with this project's keys after them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Tsuku
from tests.fakes.github import FakeGitHub
from tests.integration.install.conftest import make_tsuku, running
from tests.integration.install.test_recipe_errors import local_recipe
from tests.unit.recipe.test_tsuku_plans import CA_CERTIFICATES, CA_GOLDEN
from tsukud.testing.download_host import FakeDownloadHost
from tsukud.testing.homebrew import FakeHomebrew

TSUKU_KEYS = list(CA_GOLDEN)


@pytest.fixture
def brewed(world: FakeGitHub) -> Iterator[Tsuku]:
    """A daemon whose Homebrew formulae API is the fake (ca-certificates' version
    source is its formula)."""
    with FakeHomebrew() as brew:
        brew.publish("ca-certificates", "2025-12-02", {})
        with running(make_tsuku(world, **brew.env())) as t:
            yield t


def test_the_wire_plan_is_tsukus_plan_then_ours(brewed: Tsuku, tmp_path: Path) -> None:
    inst = brewed
    path = tmp_path / "ca-certificates.toml"
    path.write_text(CA_CERTIFICATES, encoding="utf-8")
    cp = inst.ctl(
        "plan", str(path), "--version", "2025-12-02", "--platform", "linux/amd64", "--json"
    )
    assert cp.returncode == 0, cp.stderr
    plan = json.loads(cp.stdout)
    keys = list(plan)
    assert keys[: len(TSUKU_KEYS)] == TSUKU_KEYS  # tsuku's fields first, in its order
    assert keys[len(TSUKU_KEYS) :] == [
        "unsupported",
        "recipe_source",
        "recipe_path",
        "tag",
        "unknown_keys",
    ]
    ours = {k: plan[k] for k in TSUKU_KEYS}
    assert json.dumps(ours, indent=2) == json.dumps(CA_GOLDEN, indent=2)
    text = inst.ctl("plan", str(path), "--version", "2025-12-02", "--platform", "linux/amd64")
    assert text.returncode == 0, text.stderr
    assert "cacert.pem -> share/ca-certificates/cacert.pem" in text.stdout
    assert "sha256:f1407d974c5ed87d544bd931a278232e13925177e239fca370619aba63c757b4" in text.stdout


def test_an_output_that_is_a_file_is_installed_into_the_tree_and_not_linked(
    world: FakeGitHub, tmp_path: Path
) -> None:
    """ca-certificates' ``outputs = [{ src = "cacert.pem", dest = "share/…" }]``: the
    file lands at its dest inside the tool's directory; nothing goes on PATH."""
    pem = b"-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n"
    with FakeDownloadHost() as host, FakeHomebrew() as brew:
        host.add("/ca/cacert-2025-12-02.pem", pem, sha256_file=False)
        brew.publish("ca-certificates", "2025-12-02", {})
        text = CA_CERTIFICATES.replace("https://curl.se", host.url).replace(
            "f1407d974c5ed87d544bd931a278232e13925177e239fca370619aba63c757b4",
            hashlib.sha256(pem).hexdigest(),
        )
        with running(make_tsuku(world, **brew.env())) as t:
            local_recipe(t, "ca-certificates", text)
            cp = t.ctl("install", "ca-certificates")
            assert cp.returncode == 0, cp.stderr
            tool = t.home / "tools" / "ca-certificates-2025-12-02"
            placed = tool / "share" / "ca-certificates" / "cacert.pem"
            assert placed.read_bytes() == pem
            assert not (t.home / "bin" / "cacert.pem").exists()
            assert not (tool / "cacert.pem").exists()
