"""Stage 2's parsers, quality filter and clear-winner rule; verification and the decision;
discovery registry entries."""

from __future__ import annotations

import datetime as dt

import msgspec

from tests.fakes.ecosystems import FakeEcosystems
from tsukud.discover.ecosystem import as_probe, install_command, misfit, quality, select
from tsukud.discover.model import Candidate, Probe, RepoMeta
from tsukud.discover.registry_lookup import entry_path, parse_entry
from tsukud.discover.verify import ago, assess, decide, merge, meta_from_repo
from tsukud.github.client import GitHubRateLimited, Owner, Parent, Repo, RepoNotFound
from tsukud.registries import crates, goproxy, npm, pypi, rubygems
from tsukud.registries._common import PackageFacts

NOW = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)


def test_parsers_read_the_registries_shapes() -> None:
    eco = FakeEcosystems()
    try:
        eco.add_crate("rg-x", recent_downloads=500, versions=7, repository="https://github.com/a/b")
        eco.add_npm(
            "stripe-cli", weekly_downloads=42, versions=2, repository="https://github.com/x/y"
        )
        eco.add_pypi("httpie", releases=40, repository="https://github.com/httpie/cli")
        eco.add_gem(
            "rails", downloads=10**8, versions=400, source_code_uri="https://github.com/rails/rails"
        )
        eco.add_go("golang.org", versions=4, origin="https://github.com/golang/go")
        c = as_probe("crates.io", crates.probe_facts("rg-x", eco.crates["rg-x"]))
        assert c is not None and (c.downloads, c.version_count, c.repository) == (500, 7, "a/b")
        assert c.builder == "crates.io"
        n = as_probe("npm", npm.probe_facts("stripe-cli", eco.npm["stripe-cli"], {"downloads": 42}))
        assert n is not None and (n.downloads, n.version_count, n.repository) == (42, 2, "x/y")
        # case-insensitive exact match
        p = as_probe("pypi", pypi.probe_facts("HTTPie", eco.pypi["httpie"]))
        assert p is not None and p.version_count == 40 and p.repository == "httpie/cli"
        gem = rubygems.probe_facts("rails", eco.gems["rails"], eco.gem_versions["rails"])
        r = as_probe("rubygems", gem)
        assert r is not None and r.downloads == 10**8 and r.version_count == 400
        g = as_probe("go", goproxy.probe_facts("golang.org", eco.go["golang.org"], "v1\nv2\nv3\n"))
        assert g is not None and g.version_count == 3 and g.repository == "golang/go"
    finally:
        eco.close()
    # exact names only
    assert crates.probe_facts("rg", {"crate": {"name": "rg_x"}}) is None
    assert npm.probe_facts("a", {"name": "b"}, None) is None
    assert pypi.probe_facts("a", {"info": {}}) is None
    assert goproxy.probe_facts("m", {}, "") is None


def test_the_first_github_url_among_a_package_s_links_is_its_repository() -> None:
    facts = PackageFacts(
        source="x",
        has_repository=True,
        repository_urls=("https://example.org/x", "https://github.com/o/r.git"),
    )
    probe = as_probe("pypi", facts)
    assert probe is not None and probe.repository == "o/r" and probe.has_repository
    assert as_probe("pypi", None) is None


def test_quality_thresholds_use_or() -> None:
    def p(builder: str, dl: int, vc: int) -> Probe:
        return Probe(builder=builder, source="x", downloads=dl, version_count=vc)

    assert quality(p("crates.io", 100, 0)) is None
    assert quality(p("crates.io", 0, 5)) is None
    assert quality(p("crates.io", 99, 4)) == "downloads 99 < 100 and version count 4 < 5"
    assert quality(p("npm", 10, 4)) is not None
    assert quality(p("rubygems", 999, 4)) is not None and quality(p("rubygems", 1000, 0)) is None
    assert quality(p("pypi", 0, 3)) is None and quality(p("pypi", 10**9, 2)) is not None
    assert quality(p("go", 0, 2)) == "version count 2 < 3"
    assert quality(p("homebrew", 0, 0)) is None  # unknown builders are accepted


def test_a_same_name_package_fits_only_when_it_says_it_is_something_one_runs() -> None:
    def pypi(desc: str, executables: tuple[str, ...] | None = None) -> Probe:
        return Probe(
            builder="pypi",
            source="x",
            downloads=50_000,
            version_count=30,
            description=desc,
            executables=executables,
        )

    # PyPI's real "stern" names itself, as nearly every package does: that is no fit.
    library = pypi("The stern module wants to show how a stern library can be written.")
    assert misfit(library, "stern") == [
        "its description is about something else "
        "('The stern module wants to show how a stern library can be written.')"
    ]
    for desc in (
        "An extremely fast Python linter and code formatter, written in Rust.",
        "HTTPie: modern, user-friendly command-line HTTP client for the API era.",
        "Multi-pod and container log tailing for Kubernetes (CLI)",
        "A terminal UI for git commands",
    ):
        assert misfit(pypi(desc), "x") == [], desc
    # A registry that lists what it installs (npm's bin, crates' bin_names) settles it.
    assert misfit(pypi("Fast regexes", executables=("rgx",)), "rgx") == []
    assert misfit(pypi("Fast regexes", executables=()), "rgx") == [
        "it installs no executable",
        "its description is about something else ('Fast regexes')",
    ]


def test_select_single_clear_winner_and_ambiguous() -> None:
    big = Probe(builder="npm", source="x", downloads=50_000, version_count=12, has_repository=True)
    small = Probe(builder="crates.io", source="x", downloads=4_000, version_count=8)
    close = Probe(builder="crates.io", source="x", downloads=10_000, version_count=8)
    assert select([]).kind == "none"
    assert select([small]).kind == "single_match"
    s = select([small, big])
    assert s.kind == "10x_popularity_gap" and s.chosen is big and s.ratio == 12.5
    s = select([close, big])
    assert s.kind == "ambiguous" and s.chosen is None and s.ranked[0] is big
    no_repo = Probe(builder="npm", source="x", downloads=50_000, version_count=12)
    assert select([no_repo, small]).kind == "ambiguous"  # the winner needs a repository
    unknown = Probe(builder="pypi", source="x", version_count=30)
    assert select([unknown, small]).kind == "ambiguous"  # both download counts must be known


def test_install_commands() -> None:
    assert install_command("crates.io", "ripgrep") == "cargo install ripgrep"
    assert install_command("npm", "x") == "npm install -g x"
    assert install_command("pypi", "httpie") == "pipx install httpie"
    assert install_command("rubygems", "x") == "gem install x"
    assert install_command("go", "golang.org") == "go install golang.org@latest"
    assert install_command("homebrew", "boost") == "brew install boost"
    assert install_command("nope", "x") is None
    assert goproxy.escape("github.com/BurntSushi/X") == "github.com/!burnt!sushi/!x"


# ------------------------------------------------------------------------------ verify


def cand(source: str, confidence: int = 90, **kw: object) -> Candidate:
    return Candidate(source=source, confidence=confidence, **kw)  # type: ignore[arg-type]


def meta(full: str, stars: int = 1000, **kw: object) -> RepoMeta:
    defaults: dict[str, object] = {
        "owner": full.split("/")[0],
        "owner_type": "Organization",
        "created_at": "2019-03-01T00:00:00Z",
        "pushed_at": "2026-11-20T00:00:00Z",
    }
    return RepoMeta(full_name=full, stars=stars, **{**defaults, **kw})  # type: ignore[arg-type]


def test_meta_from_the_clients_repository_value() -> None:
    repo = Repo(
        full_name="evil/stripe-cli",
        fork=True,
        stargazers_count=2,
        owner=Owner(login="evil", type="User"),
        created_at="2026-11-20T00:00:00Z",
        parent=Parent(full_name="stripe/stripe-cli", stargazers_count=1800),
    )
    m = meta_from_repo(repo)
    assert (m.fork, m.parent, m.parent_stars, m.owner, m.owner_type, m.created_at) == (
        True,
        "stripe/stripe-cli",
        1800,
        "evil",
        "User",
        "2026-11-20T00:00:00Z",
    )
    # A parent is only a parent of a fork.
    assert meta_from_repo(msgspec.structs.replace(repo, fork=False)).parent is None


def test_assess_popular_non_fork_is_verified() -> None:
    v = assess(
        cand("stripe/stripe-cli", seen_in_results=True),
        meta("stripe/stripe-cli"),
        None,
        now=NOW,
        had_search_results=True,
    )
    assert v.status == "verified" and v.popular and v.auto_approvable
    assert v.age_days is not None and v.age_days > 2000 and v.last_push_days == 2
    assert v.warnings == ()


def test_assess_rejections() -> None:
    low = assess(cand("a/b", confidence=69), meta("a/b"), None, now=NOW)
    assert low.status == "rejected" and "confidence 69" in (low.reason or "")
    archived = assess(cand("a/b"), meta("a/b", archived=True), None, now=NOW)
    assert archived.status == "rejected" and "archived" in (archived.reason or "")
    unpopular = assess(cand("evil/x"), meta("evil/x", stars=3), None, now=NOW)
    assert unpopular.status == "rejected" and "3 stars" in (unpopular.reason or "")
    missing = assess(cand("a/b"), None, RepoNotFound("gone"), now=NOW)
    assert missing.status == "rejected" and "does not exist" in (missing.reason or "")


def test_ecosystem_downloads_make_a_small_repo_popular() -> None:
    probe = Probe(
        builder="crates.io", source="tool", downloads=5_000, version_count=9, repository="a/tool"
    )
    v = assess(cand("a/tool"), meta("a/tool", stars=10), None, now=NOW, probes=[probe])
    assert (
        v.status == "verified"
        and v.popular
        and v.popularity
        and "crates.io package tool" in v.popularity
    )
    weak = Probe(
        builder="crates.io", source="tool", downloads=5, version_count=1, repository="a/tool"
    )
    assert (
        assess(cand("a/tool"), meta("a/tool", stars=10), None, now=NOW, probes=[weak]).status
        == "rejected"
    )


def test_forks_are_kept_but_never_auto_approvable_and_the_parent_is_suggested() -> None:
    v = assess(
        cand("evil/stripe-cli"),
        meta(
            "evil/stripe-cli",
            stars=2,
            fork=True,
            parent="stripe/stripe-cli",
            parent_stars=1800,
            created_at="2026-11-19T00:00:00Z",
        ),
        None,
        now=NOW,
    )
    assert v.status == "verified" and not v.auto_approvable
    text = " | ".join(v.warnings)
    assert "FORK of stripe/stripe-cli (1800 stars)" in text
    assert "--from github:stripe/stripe-cli" in text
    assert "created 3 days ago" in text


def test_rate_limited_is_unverified_with_the_hint() -> None:
    err = GitHubRateLimited(
        "GitHub API rate limit exceeded", url="u", retry_at=None, hint="Set GITHUB_TOKEN"
    )
    v = assess(cand("stripe/stripe-cli"), None, err, now=NOW)
    assert v.status == "unverified" and not v.auto_approvable
    assert "SKIPPED (rate limited)" in v.warnings[0] and "GITHUB_TOKEN" in v.warnings[0]


def test_decide_ranks_by_confidence_then_stars_and_prefers_auto_approvable() -> None:
    good = assess(cand("stripe/stripe-cli", 85), meta("stripe/stripe-cli", 1800), None, now=NOW)
    fork = assess(
        cand("evil/stripe-cli", 95),
        meta("evil/stripe-cli", 2, fork=True, parent="stripe/stripe-cli", parent_stars=1800),
        None,
        now=NOW,
    )
    also = assess(cand("stripe/stripe", 85), meta("stripe/stripe", 300), None, now=NOW)
    d = decide([fork, also, good])
    assert d.selected is good and d.auto_approvable
    assert [v.source for v in d.ranked] == ["evil/stripe-cli", "stripe/stripe-cli", "stripe/stripe"]
    only_fork = decide([fork])
    assert only_fork.selected is fork and not only_fork.auto_approvable
    assert decide([assess(cand("a/b", 10), meta("a/b"), None, now=NOW)]).selected is None


def test_merge_keeps_the_best_confidence_and_all_evidence() -> None:
    merged = merge(
        [
            cand("Stripe/Stripe-CLI", 80, evidence=("a",)),
            cand("stripe/stripe-cli", 95, evidence=("b",), seen_in_results=True),
        ]
    )
    assert len(merged) == 1 and merged[0].confidence == 95
    assert merged[0].evidence == ("b", "a") and merged[0].seen_in_results


def test_ago() -> None:
    assert [ago(d) for d in (0, 1, 3, 8, 20, 40, 100, 400, 1000)] == [
        "today", "1 day ago", "3 days ago", "1 week ago", "2 weeks ago", "1 month ago",
        "3 months ago", "1 year ago", "2 years ago",
    ]  # fmt: skip


# ------------------------------------------------------------------------------ registry


def test_entry_paths_and_parsing() -> None:
    assert entry_path("stripe-cli") == "s/st/stripe-cli.json"
    assert entry_path("x") == "x/_/x.json"
    e = parse_entry(b'{"builder":"github","source":"sharkdp/bat","description":"A cat clone"}')
    assert e is not None and (e.builder, e.source, e.description) == (
        "github",
        "sharkdp/bat",
        "A cat clone",
    )
    assert parse_entry(b'{"builder":"homebrew","source":"boost","downloads":518638}') is not None
    for bad in (
        b"{",
        b'{"builder":""}',
        b'{"builder":"github","source":""}',
        b'{"builder":"github","source":"https://evil.com/a/b"}',
        b"[]",
    ):
        assert parse_entry(bad) is None


def test_future_dates_clamp_to_zero_days() -> None:
    future = (NOW + dt.timedelta(days=5)).isoformat()
    v = assess(cand("a/b"), meta("a/b", created_at=future), None, now=NOW)
    assert v.age_days == 0


def test_every_discovery_error_has_a_code_a_hint_and_a_retryable_flag() -> None:
    from tsukud.discover import errors
    from tsukud.errors import TsukuError

    classes = [
        c
        for c in vars(errors).values()
        if isinstance(c, type) and issubclass(c, errors.DiscoveryError)
    ]
    assert len(classes) >= 12
    codes = [c.code for c in classes]
    assert len(set(codes)) == len(codes)
    for c in classes:
        assert issubclass(c, TsukuError) and c.default_hint, c
        assert isinstance(c.retryable, bool)
    retryable = {c.code for c in classes if c.retryable}
    assert retryable == {
        "discovery_timeout",
        "discovery_unverified",
        "discovery_search_failed",
        "discovery_llm_unavailable",
    }
