"""A batch job's failure, classified from the exceptions the real code raises against
the real fakes: only a service that is unwell (503, 429, a closed port) is
``transport``, so only it may open an ecosystem's breaker; a 404, a bad source, a
release without binaries, a recipe that fails validation or a refused URL never is."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Iterator

import pytest

from tests.fakes.ecosystems import FakeEcosystems
from tests.fakes.github import FakeGitHub
from tests.fakes.http import Reply
from tests.fakes.releases import FakeAsset, FakeRelease, FakeRepo, tar_gz
from tests.integration.create.helpers import Sink, create_in_process
from tests.integration.create.test_create_pipeline import PLATFORMS
from tsukud.batch.outcome import MAX_MESSAGE, Failure, classify, ecosystem_of
from tsukud.create.ecosystem_builders import DRAFTERS
from tsukud.github.client import GitHub
from tsukud.install.homebrew.client import HomebrewClient
from tsukud.net.http import Http, Settings
from tsukud.net.retry import RetryPolicy
from tsukud.secrets import REDACTOR
from tsukud.source import PREFIXES, EcosystemPackage, parse_source
from tsukud.testing.homebrew import FakeHomebrew
from tsukud.validation.validator import Validator

QUICK = Settings(
    max_wait=0.2, total_timeout=5, retry=RetryPolicy(max_tries=2, base_delay=0.01, max_delay=0.02)
)


@pytest.fixture
def registry() -> Iterator[FakeEcosystems]:
    with FakeEcosystems() as fake:
        yield fake


@pytest.fixture
async def quick_http() -> AsyncIterator[Http]:
    h = Http(settings=QUICK, allowed_hosts=lambda: ["127.0.0.1"])
    yield h
    await h.aclose()


async def failure_of(call: Awaitable[object], source: str) -> Failure:
    try:
        await call
    except Exception as exc:  # the real error, whatever it is
        return classify(exc, source=source)
    raise AssertionError(f"{source}: no failure")


def draft(http: Http, registry: FakeEcosystems, source: str) -> Awaitable[object]:
    eco = parse_source(source)
    assert isinstance(eco, EcosystemPackage)
    base = registry.base("crates.io" if eco.ecosystem == "crates" else eco.ecosystem)
    return DRAFTERS[eco.ecosystem](http, base, "tool", eco.package, None)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ecosystems_come_from_the_sources_create_accepts() -> None:
    assert set(DRAFTERS) <= set(PREFIXES)
    assert {"github", "homebrew"} <= set(PREFIXES)
    assert ecosystem_of("npm:prettier") == "npm"
    assert ecosystem_of("stern/stern") == "github"
    assert ecosystem_of("HOMEBREW:htop") == "homebrew"
    assert ecosystem_of("cpan:Foo") is None


async def test_a_registry_answering_503_is_transport(
    quick_http: Http, registry: FakeEcosystems
) -> None:
    registry.add_npm("prettier")
    registry.fail["npm"] = 503
    f = await failure_of(draft(quick_http, registry, "npm:prettier"), "npm:prettier")
    assert f == Failure("transport", f.message, True, "npm", True)
    assert "HTTP 503" in f.message and "gave up after 2 tries" in f.message


async def test_a_429_with_a_long_retry_after_is_transport(
    quick_http: Http, registry: FakeEcosystems
) -> None:
    registry.add_crate("ripgrep")
    registry.push(Reply(429, body=b"slow down", headers={"retry-after": "3600"}))
    f = await failure_of(draft(quick_http, registry, "crates:ripgrep"), "crates:ripgrep")
    assert (f.category, f.transport, f.ecosystem, f.retryable) == (
        "transport",
        True,
        "crates",
        True,
    )
    assert "429" in f.message


async def test_a_closed_port_is_transport(quick_http: Http) -> None:
    base = f"http://127.0.0.1:{closed_port()}/npm"
    f = await failure_of(DRAFTERS["npm"](quick_http, base, "t", "prettier", None), "npm:prettier")
    assert (f.category, f.transport) == ("transport", True)
    assert "cannot connect" in f.message


async def test_a_registry_that_stops_answering_is_transport(registry: FakeEcosystems) -> None:
    registry.add_npm("prettier")
    registry.delay["npm"] = 2.0
    http = Http(
        settings=Settings(read_timeout=0.2, retry=QUICK.retry), allowed_hosts=lambda: ["127.0.0.1"]
    )
    try:
        f = await failure_of(draft(http, registry, "npm:prettier"), "npm:prettier")
    finally:
        await http.aclose()
    assert (f.category, f.transport, f.retryable) == ("transport", True, True)
    assert "timed out" in f.message


async def test_an_unknown_package_is_not_transport(
    quick_http: Http, registry: FakeEcosystems
) -> None:
    f = await failure_of(draft(quick_http, registry, "npm:nosuch"), "npm:nosuch")
    assert f == Failure("not_found", f.message, False, "npm", False)
    # a 404 from a registry read through create's own "does not exist" answer
    f = await failure_of(draft(quick_http, registry, "pypi:nosuch"), "pypi:nosuch")
    assert f == Failure("not_found", f.message, False, "pypi", False)
    assert "does not exist" in f.message


async def test_other_4xx_answers_are_not_transport(
    quick_http: Http, registry: FakeEcosystems
) -> None:
    registry.add_npm("prettier")
    registry.fail["npm"] = 403
    f = await failure_of(draft(quick_http, registry, "npm:prettier"), "npm:prettier")
    assert (f.transport, f.retryable) == (False, False)


async def test_a_bad_source_is_not_transport() -> None:
    try:
        parse_source("npm:../../etc/passwd")
    except Exception as exc:
        f = classify(exc, source="npm:../../etc/passwd")
    assert f == Failure("bad_source", f.message, False, "npm", False)


async def test_a_plain_http_url_is_refused_not_transport(quick_http: Http) -> None:
    f = await failure_of(quick_http.get("http://example.com/tool"), "github:acme/tool")
    assert f == Failure("refused", f.message, False, "github", False)


async def test_github_5xx_is_transport_and_404_is_not(
    gh: FakeGitHub, github: GitHub, http: Http
) -> None:
    sink = Sink()
    gh.override(r"/repos/acme/flaky", status=502, body=b"bad gateway")

    def create(repo: str) -> Awaitable[object]:
        return create_in_process(
            http=http, github=github, github_url=gh.web_url, tool="x", repo=repo, sink=sink
        )

    f = await failure_of(create("acme/flaky"), "github:acme/flaky")
    assert (f.category, f.transport, f.ecosystem) == ("transport", True, "github")
    f = await failure_of(create("acme/nosuch"), "github:acme/nosuch")
    assert (f.category, f.transport, f.retryable) == ("not_found", False, False)
    gh.rate_limit_remaining = 0
    f = await failure_of(create("acme/nosuch"), "github:acme/nosuch")
    assert (f.category, f.transport) == ("transport", True)


async def test_a_release_without_binaries_is_no_build(
    gh: FakeGitHub, github: GitHub, http: Http
) -> None:
    names = ["x_1.0.0_windows_amd64.zip", "x_1.0.0_amd64.deb", "checksums.txt", "x-src.tar.gz"]
    gh.add_repo(
        FakeRepo("acme/srconly", [FakeRelease("v1.0.0", [FakeAsset(n, b"x") for n in names])])
    )
    f = await failure_of(
        create_in_process(
            http=http,
            github=github,
            github_url=gh.web_url,
            tool="x",
            repo="acme/srconly",
            sink=Sink(),
        ),
        "github:acme/srconly",
    )
    assert f == Failure("no_build", f.message, False, "github", False)


async def test_a_bottle_host_answering_503_is_transport() -> None:
    with FakeHomebrew() as brew:
        http = Http(settings=QUICK, allowed_hosts=lambda: {"127.0.0.1"})
        try:
            client = HomebrewClient(
                http, api_url=lambda: brew.api.url, registry_url=lambda: brew.registry.url
            )
            for _ in range(2):
                brew.api.push(Reply(503, body=b"down for maintenance"))
            f = await failure_of(client.formula("htop"), "homebrew:htop")
            assert (f.category, f.transport, f.ecosystem) == ("transport", True, "homebrew")
            f = await failure_of(client.formula("nosuch"), "homebrew:nosuch")
            assert not f.transport and not f.retryable
        finally:
            await http.aclose()


def broken_repo() -> FakeRepo:
    """Its binary exits 1 whatever it is asked: the recipe cannot verify."""
    script = b"#!/bin/sh\necho broken >&2\nexit 1\n"
    assets = [
        FakeAsset(f"broken_1.0.0_{o}_{a}.tar.gz", tar_gz({"broken": (script, 0o755)}))
        for o, a in PLATFORMS
    ]
    return FakeRepo("acme/broken", [FakeRelease("v1.0.0", assets)])


async def test_a_recipe_failing_validation_is_not_transport(
    gh: FakeGitHub, github: GitHub, http: Http, validator: Validator
) -> None:
    gh.add_repo(broken_repo())
    f = await failure_of(
        create_in_process(
            http=http,
            github=github,
            github_url=gh.web_url,
            tool="broken",
            repo="acme/broken",
            sink=Sink(),
            validator=validator,
            deterministic_only=True,
        ),
        "github:acme/broken",
    )
    assert f.category == "validation", f
    assert (f.transport, f.retryable) == (False, False)


def test_the_message_is_one_safe_redacted_line() -> None:
    from tsukud.net.http import HttpStatusError

    secret = "sk-ant-outcome-secret-0123456789"
    REDACTOR.update([secret])
    exc = HttpStatusError(
        f"https://r.example/x?token={secret}: HTTP 503\n\x1b]8;;evil\x07 \u202e" + "y" * 500,
        status=503,
        url="https://r.example/x",
    )
    f = classify(exc, source="pypi:x")
    assert f.transport and f.ecosystem == "pypi"
    assert secret not in f.message and "\n" not in f.message and "\x1b" not in f.message
    assert "\u202e" not in f.message and len(f.message) <= MAX_MESSAGE


def test_a_task_groups_failure_is_read_through_its_error() -> None:
    from tsukud.validation.errors import ValidationFailed

    group = BaseExceptionGroup("tasks", [ValidationFailed("did not verify")])
    assert classify(group, source="go:example.com/x").category == "validation"
    assert classify(RuntimeError("boom"), source="go:x").category == "internal"
