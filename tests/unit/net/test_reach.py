"""An unreachable service is named the same way by every wrapper: the code stays
``network_unreachable`` (exit 5), the wrapper adds what it was doing and which setting
points where (``HttpUnreachable.at``), and several services out of reach together are one
error naming each (``all_out_of_reach``)."""

from __future__ import annotations

from tsukud.errors import ExitCode
from tsukud.net.http import HttpUnreachable, all_out_of_reach
from tsukud.net.reach import Place, described, hint_for, places_in, setting_names

URL = "http://127.0.0.1:9/recipes/j/jq.toml"


def _refused(url: str = URL, **data: str) -> HttpUnreachable:
    """What the HTTP layer raises for a refused loopback port (net/http.py)."""
    return HttpUnreachable(
        f"{url}: cannot connect: nothing is listening there (connection refused); not tried again",
        url=url,
        host="127.0.0.1",
        **data,
    )


def test_a_setting_is_named_with_its_variable() -> None:
    assert setting_names("registry.url") == "registry.url (TSUKU_REGISTRY_URL)"
    assert setting_names("discover.npm_url") == "discover.npm_url (TSUKU_NPM_URL)"
    assert setting_names("no.such_url") == "no.such_url"  # named as given, never a crash


def test_a_wrapper_adds_its_context_and_keeps_the_code() -> None:
    placed = _refused().at(
        "recipe registry",
        "http://127.0.0.1:9",
        "registry.url",
        doing="cannot fetch the recipe for jq",
        instead="A recipe in ~/.tsuku/recipes/jq.toml is used without the registry.",
    )
    assert placed.code == "network_unreachable" and placed.exit_code == ExitCode.NETWORK
    assert placed.retryable and placed.never_sent
    assert placed.message == (
        "cannot fetch the recipe for jq: the recipe registry http://127.0.0.1:9, set by "
        "registry.url (TSUKU_REGISTRY_URL), cannot be reached: " + _refused().message
    )
    assert placed.hint == (
        "Offline? The recipe registry http://127.0.0.1:9 cannot be reached, and trying "
        "again would not help. Check the network connection or the proxy (HTTPS_PROXY), or "
        "point registry.url (TSUKU_REGISTRY_URL) at a server you can reach. A recipe in "
        "~/.tsuku/recipes/jq.toml is used without the registry."
    )
    assert placed.data["url"] == URL and placed.data["host"] == "127.0.0.1"
    assert places_in(placed.data) == [
        Place("recipe registry", "http://127.0.0.1:9", "registry.url")
    ]


def test_the_innermost_wrapper_names_the_service() -> None:
    """GitHub's client placed it; create, wrapping that call, only adds what it did."""
    github = _refused().at("GitHub API", "http://127.0.0.1:9", "github.api_url")
    outer = github.at("recipe registry", "http://x", "registry.url", doing="creating rg")
    assert outer.message == f"creating rg: {github.message}"
    assert outer.hint == github.hint and "TSUKU_GITHUB_API_URL" in outer.hint
    assert places_in(outer.data) == places_in(github.data)


def test_an_unreachable_proxy_keeps_the_proxy_hint() -> None:
    through = _refused(proxy="http://127.0.0.1:3128")
    through.hint = "Check the proxy settings (HTTPS_PROXY, ...)."
    placed = through.at("npm registry", "https://registry.npmjs.org", "discover.npm_url")
    assert placed.hint == through.hint
    assert "set by discover.npm_url (TSUKU_NPM_URL)" in placed.message


def test_a_url_from_a_recipe_has_no_setting_to_name() -> None:
    placed = _refused("https://example.org/v.json").at(
        "recipe's version URL", "https://example.org/v.json"
    )
    assert "set by" not in placed.message
    assert placed.hint.endswith("or check that URL.")


def test_several_services_out_of_reach_are_one_error_naming_each() -> None:
    registry = _refused().at("recipe registry", "http://127.0.0.1:9", "registry.url")
    npm = _refused("http://127.0.0.2:9/greet").at(
        "npm registry", "http://127.0.0.2:9", "discover.npm_url"
    )
    error = all_out_of_reach([registry, npm], "nothing could be asked about greet")
    assert error.code == "network_unreachable"
    assert error.message == (
        f"nothing could be asked about greet: {registry.message}; {npm.message}"
    )
    assert error.hint.startswith(
        "Offline? The recipe registry http://127.0.0.1:9 and the npm registry "
        "http://127.0.0.2:9 cannot be reached"
    )
    assert "point registry.url (TSUKU_REGISTRY_URL) or discover.npm_url (TSUKU_NPM_URL)" in (
        error.hint
    )
    assert places_in(error.data) == [*places_in(registry.data), *places_in(npm.data)]


def test_the_same_place_twice_is_named_once() -> None:
    place = Place("GitHub API", "https://api.github.com", "github.api_url")
    assert hint_for([place, place]).count("GitHub API") == 1
    assert described(place) == (
        "the GitHub API https://api.github.com, set by github.api_url (TSUKU_GITHUB_API_URL),"
    )


async def test_discovery_tells_every_registry_out_of_reach_from_no_such_package() -> None:
    """Each ecosystem's probe lets a registry out of reach through (npm's too: it read
    one as "no such package", so discovery said "not found" offline), placed at its
    setting, in the registries' order."""
    from tsukud.discover.ecosystem import BUILDERS, probe_all
    from tsukud.registries.ecosystems import BY_BUILDER

    async def offline(url: str) -> tuple[int, bytes]:
        raise _refused(url)

    report = await probe_all(offline, "ripgrep")
    assert report.none_reached() and not report.matches
    assert list(report.out_of_reach) == list(BUILDERS)
    for builder, error in report.out_of_reach.items():
        [place] = places_in(error.data)
        assert place.setting == BY_BUILDER[builder].registry.key, builder

    async def not_there(url: str) -> tuple[int, bytes]:
        return 404, b""

    answered = await probe_all(not_there, "ripgrep")
    assert not answered.none_reached() and not answered.out_of_reach
