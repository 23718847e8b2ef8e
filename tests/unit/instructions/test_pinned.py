"""A page with fixed download URLs and no version feed: the answer's ``page`` version,
the checks that tie it to what the page shows, the recipe in tsuku's own format (no
``[version]``, literal URLs, ``validated_version``) and the resolver installing exactly
that version and nothing else."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tsukud.github.client import GitHub
from tsukud.install.versions import VersionResolver
from tsukud.instructions.answer import OUTSIDE_PAGE, judge, stated_in
from tsukud.net.http import Http
from tsukud.recipe import (
    DownloadArchiveStep,
    VersionNotFound,
    dump_recipe,
    parse_recipe,
    pinned_version,
)
from tsukud.testing.github import FakeGitHub

PAGE_TEXT = (
    "foo 1.4.2 is out. Download https://dl.example.test/foo/1.4.2/foo-linux-amd64.tar.gz "
    "or https://dl.example.test/foo/1.4.2/foo-darwin-arm64.tar.gz, extract, put foo on PATH. "
    "Nightly: https://dl.example.test/foo/latest/foo-linux-amd64.tar.gz"
)
ORIGINS = frozenset({"https://dl.example.test"})
URL = "https://dl.example.test/foo/1.4.2/foo-linux-amd64.tar.gz"


def answer(version: Any = "1.4.2", **build: Any) -> dict[str, Any]:
    return {
        "kind": "download",
        "summary": "one tarball per platform, version 1.4.2",
        "version": {"source": "page", "version": version},
        "builds": [
            {
                "os": "linux",
                "arch": "amd64",
                "url": URL,
                "format": "tar.gz",
                "binaries": ["foo"],
                **build,
            }
        ],
        "verify": {"command": "foo --version", "pattern": "{version}"},
    }


def check(args: dict[str, Any], text: str = PAGE_TEXT) -> Any:
    return judge(
        args, tool="foo", page_url="https://foo.example.test/", origins=ORIGINS, page_text=text
    )


def test_a_version_the_page_states_becomes_a_recipe_tsuku_reads_without_a_source() -> None:
    judged = check(answer())
    assert judged.ok, judged.findings
    recipe = judged.recipe
    assert recipe is not None
    assert recipe.version is None  # no [version]: tsuku reads it (as version "dev")
    assert recipe.metadata.validated_version == "1.4.2"
    (step,) = recipe.steps
    assert isinstance(step, DownloadArchiveStep) and step.url == URL
    # No placeholder left anywhere: tsuku would fill {version} with "dev".
    text = dump_recipe(recipe)
    assert "{version}" not in text and "[version]" not in text
    assert recipe.verify is not None and recipe.verify.pattern == "1.4.2"
    again = parse_recipe(text, "foo.toml")
    assert again == recipe and pinned_version(again) == "1.4.2"


def test_a_url_with_the_placeholder_is_spelled_out_and_v_is_dropped() -> None:
    judged = check(answer("v1.4.2", url="https://dl.example.test/foo/{version}/foo.tar.gz"))
    assert judged.ok, judged.findings
    (step,) = judged.recipe.steps
    assert step.url == "https://dl.example.test/foo/1.4.2/foo.tar.gz"
    assert judged.recipe.metadata.validated_version == "1.4.2"


def test_a_version_the_page_does_not_state_is_refused() -> None:
    judged = check(answer("1.5.0", url="https://dl.example.test/foo/1.5.0/foo.tar.gz"))
    assert not judged.ok and judged.recipe is None
    assert any(f.category == OUTSIDE_PAGE and "1.5.0" in f.message for f in judged.findings)
    # Only hidden text (not in the visible text the code was given) stating it is no better.
    assert not check(answer("1.4"), "foo 1.4.2 and 11.4 and 1.4.21").ok


def test_a_latest_url_or_another_versions_url_is_not_pinned() -> None:
    latest = check(answer(url="https://dl.example.test/foo/latest/foo-linux-amd64.tar.gz"))
    assert not latest.ok
    assert any("does not contain version 1.4.2" in f.message for f in latest.findings)
    older = check(answer(url="https://dl.example.test/foo/1.4.21/foo.tar.gz"))
    assert not older.ok


@pytest.mark.parametrize("version", ["latest", "", "1.4.2 && rm -rf ~", "../1.4.2", None])
def test_a_version_must_look_like_one(version: Any) -> None:
    judged = check(answer(version))
    assert not judged.ok and judged.recipe is None


def test_stated_means_the_whole_version() -> None:
    assert stated_in("foo v1.4.2 released", "1.4.2")
    assert stated_in("/foo/1.4.2/foo.tar.gz", "1.4.2")
    assert stated_in("foo-1.4.2-linux.tar.gz", "1.4.2")
    assert not stated_in("11.4.2", "1.4.2")
    assert not stated_in("1.4.21", "1.4.2")
    assert not stated_in("1.4.2.1", "1.4.2")


def test_a_recipe_with_a_source_or_without_validated_version_is_not_pinned() -> None:
    base = (
        '[metadata]\nname = "foo"\n{meta}\n{version}'
        '[[steps]]\naction = "download_archive"\nurl = "' + URL + '"\n'
        'archive_format = "tar.gz"\nbinaries = ["foo"]\n'
    )
    meta = 'validated_version = "1.4.2"'
    assert pinned_version(parse_recipe(base.format(meta=meta, version=""))) == "1.4.2"
    assert pinned_version(parse_recipe(base.format(meta="", version=""))) is None
    feed = '[version]\nsource = "http_json"\nurl = "https://x.test/v"\nversion_path = "v"\n\n'
    assert pinned_version(parse_recipe(base.format(meta=meta, version=feed))) is None
    gh = (
        '[metadata]\nname = "foo"\nvalidated_version = "1.4.2"\n\n[[steps]]\n'
        'action = "github_archive"\nrepo = "o/foo"\nasset_pattern = "foo-{version}.tar.gz"\n'
        'binaries = ["foo"]\n'
    )
    assert pinned_version(parse_recipe(gh)) is None


@pytest.fixture
async def resolver() -> AsyncIterator[VersionResolver]:
    """A real resolver over the real HTTP layer and a fake GitHub that must not be asked."""
    with FakeGitHub() as fake:
        http = Http(allowed_hosts=lambda: {"127.0.0.1"})
        try:
            yield VersionResolver(GitHub(http, fake.api_url))
        finally:
            await http.aclose()
        assert fake.requests == []


async def test_the_resolver_installs_the_pinned_version_and_no_other(
    resolver: VersionResolver,
) -> None:
    recipe = check(answer()).recipe
    res = await resolver.resolve(recipe)
    assert (res.version, res.tag, res.how) == ("1.4.2", "1.4.2", "pinned")
    assert (await resolver.resolve(recipe, "v1.4.2")).version == "1.4.2"
    with pytest.raises(VersionNotFound) as caught:
        await resolver.resolve(recipe, "1.5.0")
    assert "pinned at 1.4.2" in caught.value.message
    assert caught.value.hint is not None and "foo@1.4.2" in caught.value.hint
