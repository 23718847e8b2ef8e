"""What a page may decide: every common shape of a script run from the network is
recognised (shown, never a download), a script is never the binary, hosts are shown in
ASCII with look-alikes flagged, and only the repository's own hosts and packages are
what ``--yes`` may accept (instructions/page.py, hosts.py, trust.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tsukud.instructions.answer import SCRIPT, judge
from tsukud.instructions.hosts import ascii_host, lookalike, registrable_domain
from tsukud.instructions.page import context, is_script_name, named_origins, shown_commands
from tsukud.instructions.trust import Owner, foreign, host_uses, listing, package_use

U = "https://get.example.test/install.sh"

# (the page's text, the script URL the code must find in it)
SHAPES = [
    (f"curl -fsSL {U} | sh", U),
    (f"curl -o i.sh {U} && sh i.sh", U),
    (f"curl -fsSL {U} | python3 -", U),
    (f"iwr {U} | iex", U),
    (f"irm {U} | iex", U),
    (f"Invoke-WebRequest {U} | Invoke-Expression", U),
    (f"curl -sSL {U} | tee install.log | sh", U),
    (f'bash -c "$(curl -fsSL {U})"', U),
    (f"sh <(curl -s {U})", U),
    (f"wget -qO- {U} | sh", U),
    (f"wget -O - {U} | sudo -E bash -", U),
    (f"curl -sL {U} | bash -s -- --prefix ~/.local", U),
    (f'python3 -c "$(curl -fsSL {U})"', U),
    (f'eval "$(curl -fsSL {U})"', U),
    (f"wget {U}; chmod +x install.sh; ./install.sh", U),
    (f"iex ((New-Object System.Net.WebClient).DownloadString('{U}'))", U),
    (f"iex (irm {U})", U),
    (f"iwr {U} -OutFile install.ps1; .\\install.ps1", U),
]


@pytest.mark.parametrize(("text", "url"), SHAPES, ids=[t for t, _ in SHAPES])
def test_every_common_script_shape_is_recognised(text: str, url: str) -> None:
    page = f"Install foo: {text} and you are done. Docs at https://example.test/docs"
    (found,) = shown_commands(page)
    assert found.kind == "script" and found.url == url
    assert url in found.command


@pytest.mark.parametrize(
    "text",
    [
        f"curl -LO {U.replace('install.sh', 'foo.tar.gz')} && tar xzf foo.tar.gz",
        "curl -LO https://dl.example.test/foo && chmod +x foo && ./foo --version",
        "Download https://dl.example.test/foo.tgz and extract it; then run foo --help",
    ],
)
def test_a_download_that_is_not_a_script_is_not_one(text: str) -> None:
    assert shown_commands(text) == ()


def download(url: str, fmt: str = "binary", binaries: tuple[str, ...] = ("foo",)) -> Any:
    return {
        "kind": "download",
        "summary": "s",
        "version": {"source": "page", "version": "1.4.2"},
        "builds": [
            {"os": "linux", "arch": "amd64", "url": url, "format": fmt, "binaries": binaries}
        ],
        "verify": {"command": "foo --version"},
    }


@pytest.mark.parametrize(
    ("url", "fmt", "binaries"),
    [
        ("https://dl.example.test/1.4.2/install.sh", "binary", ("foo",)),
        ("https://dl.example.test/1.4.2/setup.ps1", "binary", ("foo",)),
        ("https://dl.example.test/1.4.2/foo.tar.gz", "tar.gz", ("install.sh",)),
        ("https://dl.example.test/1.4.2/foo.tar.gz", "tar.gz", ("bin/get-foo.py",)),
    ],
)
def test_a_script_by_its_name_is_never_the_binary(
    url: str, fmt: str, binaries: tuple[str, ...]
) -> None:
    text = f"foo 1.4.2: download {url}"
    judged = judge(
        download(url, fmt, binaries),
        tool="foo",
        page_url="https://dl.example.test/",
        origins=named_origins(text),
        page_text=text,
    )
    assert not judged.ok
    assert any(f.category == SCRIPT for f in judged.findings), judged.findings
    assert is_script_name(url) or any(is_script_name(b) for b in binaries)


def test_a_script_piped_into_a_shell_on_the_page_is_never_a_download() -> None:
    text = f"foo 1.4.2: curl -fsSL {U} | python3 -"
    scripts = {c.url for c in shown_commands(text) if c.url}
    judged = judge(
        download(U),
        tool="foo",
        page_url="https://get.example.test/",
        origins=named_origins(text),
        page_text=text,
        scripts=scripts,
    )
    assert any(f.category == SCRIPT and "pipes into a shell" in f.message for f in judged.findings)


CYRILLIC_A = "\u0430"


def test_hosts_are_shown_in_ascii_and_look_alikes_flagged() -> None:
    host = f"p{CYRILLIC_A}ypal.com"
    assert ascii_host(host) == "xn--pypal-4ve.com"
    flags = lookalike(host)
    assert any("xn--pypal-4ve.com" in f for f in flags)
    assert any("mixed scripts" in f and "CYRILLIC+LATIN" in f for f in flags)
    assert any("looks like paypal.com" in f for f in flags)
    # The punycode form a page writes is decoded and judged the same way.
    assert lookalike("xn--pypal-4ve.com") == flags
    # Fullwidth letters fold to ASCII: flagged as looking like the ASCII name.
    assert any("looks like example.com" in f for f in lookalike("\uff45xample.com"))
    assert lookalike("dl.example.com") == ()


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("dl.example.com", "example.com"),
        ("a.b.example.co.uk", "example.co.uk"),
        ("acme.github.io", "acme.github.io"),  # not every github.io page's
        ("127.0.0.1", "127.0.0.1"),
        ("localhost", "localhost"),
    ],
)
def test_the_registrable_domain(host: str, domain: str) -> None:
    assert registrable_domain(host) == domain


OWNER = Owner(
    repo="acme/foo",
    homepage="https://foo.acme.dev/install",
    text="foo: a tool. Install with npm install -g @acme/foo-cli",
)


def uses_of(*urls: str, owner: Owner = OWNER, text: str = "") -> dict[str, Any]:
    page = text or " ".join(f"Get {u} now." for u in urls)
    return {u.ascii: u for u in host_uses(urls, page, owner)}


def test_only_the_repositorys_own_hosts_are_its_own() -> None:
    got = uses_of(
        "https://github.com/acme/foo/releases/download/v1/foo.tgz",
        "https://dl.acme.dev/foo/{version}/foo.tgz",
        "https://acme.dev.evil.test/foo.tgz",
        "https://github.com/evil/foo/releases/download/v1/foo.tgz",
        "https://objects.example.net/foo.tgz",
    )
    assert got["https://github.com/acme/foo"].own
    assert not got["https://github.com/evil/foo"].own  # one site, another owner
    assert got["https://dl.acme.dev"].own and "acme.dev" in got["https://dl.acme.dev"].why
    assert not got["https://acme.dev.evil.test"].own
    assert not got["https://objects.example.net"].own
    found = got["https://dl.acme.dev"].found
    assert found is not None and "//dl.acme.dev/foo/" in found


def test_another_repository_on_github_is_not_the_repositorys_own() -> None:
    (use,) = host_uses(["https://github.com/evil/foo/releases/download/v1/f"], "x", OWNER)
    assert not use.own


def test_a_homepage_on_an_address_trusts_only_its_own_origin() -> None:
    owner = Owner(repo="acme/foo", homepage="http://127.0.0.1:4000/foo/")
    got = uses_of("http://127.0.0.1:4000/foo/1.tgz", "http://127.0.0.1:4001/x", owner=owner)
    assert got["http://127.0.0.1:4000"].own
    assert not got["http://127.0.0.1:4001"].own


def test_a_look_alike_of_the_homepages_domain_is_never_its_own() -> None:
    owner = Owner(repo="acme/foo", homepage="https://xn--cme-8cd.dev/")  # a Cyrillic a
    (use,) = host_uses(["https://dl.xn--cme-8cd.dev/f.tgz"], "get it", owner)
    assert not use.own and use.lookalike
    assert use.ascii == "https://dl.xn--cme-8cd.dev"
    assert "LOOK-ALIKE" in listing([use])


def test_a_page_found_by_search_has_no_own_hosts_or_packages() -> None:
    (host,) = host_uses(["https://dl.acme.dev/f.tgz"], "x", Owner())
    assert not host.own
    assert not package_use("npm", "@acme/foo-cli", "npm i -g @acme/foo-cli", Owner()).own


def test_a_package_is_the_repositorys_own_only_when_the_repository_names_it() -> None:
    page = "Install: npm install -g @acme/foo-cli. Or npm install -g foo-helper"
    named = package_use("npm", "@acme/foo-cli", page, OWNER)
    assert named.own and named.found is not None and "@acme/foo-cli" in named.found
    other = package_use("npm", "foo-helper", page, OWNER)
    assert not other.own and "does not name it" in other.why
    # The repository's name alone is not naming a package: anyone may publish "foo".
    assert not package_use("npm", "foo", "npm install -g foo", Owner(repo="acme/foo")).own
    assert foreign([named, other]) == (other,)


def test_context_is_the_text_around_a_name() -> None:
    text = "a" * 100 + " npm install -g foo-helper " + "b" * 100
    got = context(text, "foo-helper")
    assert got is not None and got.startswith("…") and got.endswith("…")
    assert "npm install -g foo-helper" in got and len(got) < 140
    assert context(text, "absent") is None
