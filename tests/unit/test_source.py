"""The one parser of sources (tsukud/source.py): every spelling accepted today reads
back as one value with one canonical text, and hostile input is refused saying why,
before anything reaches the network."""

from __future__ import annotations

import msgspec
import pytest

from tsukud.errors import CATALOGUE
from tsukud.registries.ecosystems import ECOSYSTEMS, sources_hint
from tsukud.source import (
    BadSource,
    EcosystemPackage,
    GitHubRepo,
    HomebrewFormula,
    Page,
    Source,
    parse_github,
    parse_page,
    parse_source,
    repo_from_url,
    shown,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("github:stern/stern", GitHubRepo("stern", "stern")),
        ("GitHub: FiloSottile/age", GitHubRepo("FiloSottile", "age")),
        ("stern/stern", GitHubRepo("stern", "stern")),
        ("stern/stern/", GitHubRepo("stern", "stern")),
        ("github:https://github.com/k3d-io/k3d/", GitHubRepo("k3d-io", "k3d")),
        ("https://github.com/stripe/stripe-cli", GitHubRepo("stripe", "stripe-cli")),
        ("https://www.github.com/stripe/stripe-cli/releases", GitHubRepo("stripe", "stripe-cli")),
        ("https://github.com/BurntSushi/ripgrep.git", GitHubRepo("BurntSushi", "ripgrep")),
        ("//github.com/cli/cli", GitHubRepo("cli", "cli")),
        ("owner/repo.name_x-y", GitHubRepo("owner", "repo.name_x-y")),
        ("npm:prettier", EcosystemPackage("npm", "prettier")),
        ("NPM: @scope/tool", EcosystemPackage("npm", "@scope/tool")),
        ("crates:ripgrep", EcosystemPackage("crates", "ripgrep")),
        ("go:example.com/tool", EcosystemPackage("go", "example.com/tool")),
        ("homebrew:openssl@3", HomebrewFormula("openssl@3")),
        ("Homebrew:htop", HomebrewFormula("htop")),
    ],
)
def test_every_accepted_spelling_reads_as_one_value(text: str, expected: Source) -> None:
    source = parse_source(text)
    assert source == expected
    assert parse_source(str(source)) == source  # the canonical text reads back as itself


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("github:", "owner/repo"),
        ("github:a", "owner/repo"),
        ("github:a/b/c", "owner/repo"),
        ("github:a//b", "owner/repo"),
        ("a//b", "owner/repo"),
        ("github:/a/b", "owner"),
        ("github:../x", "traversal"),
        ("github:a/..", "traversal"),
        ("../a", "traversal"),
        ("https://github.com/a/../b", "traversal"),
        ("https://github.com/a/%2e%2e/b", "traversal"),
        ("https://github.com/a/%2E%2E/b", "traversal"),
        ("https://user:pass@github.com/a/b", "credentials"),
        ("https://token@github.com/a/b", "credentials"),
        ("https://github.com:443/a/b", "port"),
        ("https://gitlab.com/a/b", "unknown source"),
        ("https://github.com.evil.io/a/b", "unknown source"),
        ("http://example.com/tool", "unknown source 'http://example.com/tool'"),
        ("ftp://github.com/a/b", "scheme"),
        ("https://github.com/a/b?x=1", "query"),
        ("https://github.com/a/b#x", "query"),
        ("https://github.com/a", "owner/repo"),
        ("git@github.com:a/b", "unknown source"),
        ("gitlab:a/b", "unknown source 'gitlab:a/b'"),
        ("-a/b", "owner"),
        ("a_b/c", "owner"),
        ("a" * 40 + "/b", "owner"),
        ("a/" + "b" * 101, "repository"),
        ("a/b$(id)", "repository"),
        ("a\\b/c", "owner/repo"),
        # unicode look-alikes and invisible characters, named by their code point
        ("github:\u0455tern/stern", "U\\+0455 CYRILLIC SMALL LETTER DZE"),
        ("github:stern/st\u0435rn", "U\\+0435"),
        ("stern/stern\u200b", "U\\+200B ZERO WIDTH SPACE"),
        ("github:stern/\u202estern", "U\\+202E"),
        ("\uff4e\uff50\uff4d:prettier", "U\\+FF4E"),  # fullwidth "npm"
        ("npm:pr\u0435ttier", "U\\+0435"),
        ("homebrew:ht\u043ep", "U\\+043E"),
        ("a/b c", "whitespace"),
        ("a/b;rm -rf", "whitespace"),
        ("a/b\x1b[31m", "control"),
        ("a/b\x7f", "U\\+007F"),
        # a registry's name it cannot have, a formula that is a path
        ("npm:../../etc/passwd", "npm:<"),
        ("crates:--exec=x", "crates:<"),
        ("homebrew:../x", "homebrew:<formula>"),
        ("homebrew:", "homebrew:<formula>"),
        ("homebrew:a/b", "homebrew:<formula>"),
    ],
)
def test_hostile_sources_are_refused_saying_why(text: str, why: str) -> None:
    with pytest.raises(BadSource, match=why) as refused:
        parse_source(text)
    # one error for every refusal: create's code and exit code, every source in the hint
    assert refused.value.code == "create_bad_source"
    assert refused.value.exit_code == CATALOGUE["create_bad_source"].exit_code == 2
    assert sources_hint() in (refused.value.hint or "")


def test_the_message_shows_invisible_characters_escaped() -> None:
    with pytest.raises(BadSource) as refused:
        parse_source("stern/stern\u200b")
    assert "\u200b" not in refused.value.message
    assert "\\u200b" in refused.value.message


def test_a_page_is_a_source_only_where_one_is_found() -> None:
    assert parse_page(" https://example.com/install ") == Page("https://example.com/install")
    for bad in (
        "ftp://example.com/x",
        "https://user@example.com/",
        "https:///nohost",
        "https://example.com/a b",
        "https://example.com/" + "x" * 500,
    ):
        with pytest.raises(BadSource, match="install page"):
            parse_page(bad)
    # --from never names a page: a page's recipe needs what discovery found it by
    with pytest.raises(BadSource):
        parse_source("https://example.com/install")


def test_the_canonical_text_and_what_a_result_shows() -> None:
    assert str(GitHubRepo("o", "r")) == "github:o/r" and shown(GitHubRepo("o", "r")) == "o/r"
    pkg = EcosystemPackage("pypi", "black")
    assert str(pkg) == shown(pkg) == "pypi:black"
    assert str(HomebrewFormula("wget")) == "homebrew:wget"
    assert str(Page("https://x.test/")) == shown(Page("https://x.test/")) == "https://x.test/"
    for eco in ECOSYSTEMS:
        assert EcosystemPackage(eco.prefix, "x").record is eco


def test_sources_are_a_tagged_union_on_the_wire() -> None:
    for value in (
        GitHubRepo("o", "r"),
        EcosystemPackage("npm", "x"),
        HomebrewFormula("wget"),
        Page("https://x.test/"),
    ):
        wire = msgspec.json.encode(value)
        assert msgspec.json.decode(wire, type=Source) == value  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("git+https://github.com/stripe/stripe-cli.git", "stripe/stripe-cli"),
        ("git://github.com/a/b.git", "a/b"),
        ("git@github.com:a/b.git", "a/b"),
        ("https://github.com/a/b/tree/main/crates/x", "a/b"),
        ("github.com/a/b", "a/b"),
        ("https://gitlab.com/a/b", None),
        ("https://github.com:8080/a/b", None),
        ("https://github.com/a", None),
        ("https://github.com/a_b/c", None),
        ("not a url", None),
    ],
)
def test_a_registry_s_repository_field(url: str, expected: str | None) -> None:
    repo = repo_from_url(url)
    assert (repo.slug if repo is not None else None) == expected


def test_parse_github_alone_refuses_other_prefixes() -> None:
    assert parse_github("o/r") == GitHubRepo("o", "r")
    with pytest.raises(BadSource, match="owner/repo"):
        parse_github("npm:x")
