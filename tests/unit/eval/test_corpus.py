"""The eval corpus: the builtin one is the shared fixtures' ground truth written out,
a directory's is read the same way, and a recipe is right only with the known assets."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from tests.unit.create.releases import require_shared
from tsukud.create.preview import PlatformDownloads
from tsukud.eval.corpus import (
    DISCOVER_FILE,
    CorpusError,
    Item,
    corpus_hash,
    for_create,
    load,
    mismatches,
    parse,
    same_source,
)


def test_builtin_is_the_fixtures_ground_truth() -> None:
    require_shared()
    from tests.integration.eval.corpus_source import SHIPPED, corpus_text

    assert SHIPPED.read_text() == corpus_text(), (
        "regenerate: .venv/bin/python -m tests.integration.eval.corpus_source"
    )
    corpus = load("builtin")
    assert corpus.name == "builtin" and len(corpus.items) == 20


def test_builtin_discovery_corpus_is_the_fixtures_sources() -> None:
    """The shipped discovery corpus is what the shared fixtures name: each human
    recipe's tool and repository (gitleaks where it lives now), and the repository the
    recorded searches find."""
    require_shared()
    from tests.integration.eval.discover_source import SHIPPED, corpus_text

    assert SHIPPED.read_text() == corpus_text(), (
        "regenerate: .venv/bin/python -m tests.integration.eval.discover_source"
    )
    corpus = load("builtin", builtin=DISCOVER_FILE)
    sources = {i.tool: i.source for i in corpus.items}
    assert len(sources) == 21 and sources["stripe-cli"] == "github:stripe/stripe-cli"
    assert sources["gitleaks"] == "github:gitleaks/gitleaks"
    # A discovery corpus has no answers for create, which refuses it by name.
    with pytest.raises(CorpusError, match="age has no version and assets"):
        for_create(corpus, "builtin")
    # A create corpus is a discovery corpus too, and its hash is what it always was.
    create = load("builtin")
    assert for_create(create, "builtin") is create
    assert corpus_hash(create) == corpus_hash(parse(msgspec.json.encode(create), "again"))


def test_a_source_is_the_same_in_any_case() -> None:
    assert same_source("github:BurntSushi/ripgrep", "github:burntsushi/ripgrep")
    assert not same_source("github:burntsushi/ripgrep-fork", "github:burntsushi/ripgrep")
    assert not same_source("npm:ripgrep", "github:burntsushi/ripgrep")


def test_a_directory_corpus(tmp_path: Path) -> None:
    item = {"tool": "x", "source": "github:o/x", "version": "1.0.0", "assets": {}}
    (tmp_path / "corpus.json").write_text(json.dumps({"format": 1, "name": "d", "items": [item]}))
    corpus = load(str(tmp_path))
    assert corpus.items[0].tool == "x" and len(corpus_hash(corpus)) == 64
    with pytest.raises(CorpusError, match="absolute"):
        load("relative/dir")
    with pytest.raises(CorpusError, match="cannot read"):
        load(str(tmp_path / "missing"))
    with pytest.raises(CorpusError, match="cannot read"):
        load("/a\x00b")
    for bad, why in (
        (b"{", "not a corpus"),
        (b'{"format": 2, "name": "d", "items": []}', "format 2"),
        (b'{"format": 1, "name": "d", "items": []}', "no items"),
        (json.dumps({"format": 1, "name": "d", "items": [item, item]}).encode(), "twice"),
        (json.dumps({"format": 1, "name": "d", "items": [{**item, "x": 1}]}).encode(), "x"),
    ):
        with pytest.raises(CorpusError, match=why):
            parse(bad, "here")


def test_a_recipe_is_right_only_with_the_known_assets() -> None:
    item = Item(
        tool="t",
        source="github:o/t",
        version="1.0.0",
        assets={"linux/amd64": ["t-linux-amd64"], "darwin/amd64": []},
    )
    right = [
        PlatformDownloads(platform="linux/amd64", assets=["t-linux-amd64"]),
        PlatformDownloads(platform="darwin/amd64", unsupported="no build"),
    ]
    assert mismatches(item, right) == []
    wrong_asset = [PlatformDownloads(platform="linux/amd64", assets=["t-linux-musl"]), right[1]]
    assert mismatches(item, wrong_asset) == ["linux/amd64: t-linux-musl (want t-linux-amd64)"]
    extra = [right[0], PlatformDownloads(platform="darwin/amd64", assets=["t-darwin"])]
    assert mismatches(item, extra) == ["darwin/amd64: t-darwin (want nothing)"]
    assert mismatches(item, []) == ["linux/amd64: nothing (want t-linux-amd64)"]
