"""Homebrew bottles below the daemon: the pure rules (image names, tags, platform
choice, index entries, formula of a recipe, dependency order), the client against the
strict fake registry over the real HTTP layer, and relocation of a gcc-built keg."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.fakes import bottles
from tsukud.install.download import download
from tsukud.install.extract import extract
from tsukud.install.homebrew.client import HomebrewClient
from tsukud.install.homebrew.deps import (
    dependents,
    install_order,
    needs,
    refuse_version_change,
    unneeded,
)
from tsukud.install.homebrew.errors import DependencyCycle, DependencyInUse, HomebrewError
from tsukud.install.homebrew.pour import install_dependencies, merge_summaries
from tsukud.install.homebrew.relocate import relocate_keg, replacements
from tsukud.net.http import Http
from tsukud.recipe import ArchiveFormat, Platform, Recipe, UnsupportedPlatform, VersionNotFound
from tsukud.recipe.homebrew import (
    formula_of,
    image_name,
    index_entries,
    oci_tag,
    pick_tag_for,
    pkg_version,
    platform_tags,
    split_oci_tag,
    upstream_version,
)
from tsukud.recipe.toml_io import parse_recipe
from tsukud.testing.homebrew import FakeHomebrew, bottle_tarball

LINUX = Platform("linux", "amd64", "glibc")
ARM_LINUX = Platform("linux", "arm64", "glibc")
MAC = Platform("darwin", "arm64")
INTEL_MAC = Platform("darwin", "amd64")
needs_gcc = pytest.mark.skipif(
    not bottles.have_gcc() or LINUX.os != "linux", reason="needs gcc on Linux"
)


# ---- pure rules ------------------------------------------------------------------------


def test_names_and_tags_as_homebrew_writes_them() -> None:
    assert image_name("openssl@3") == "openssl/3"
    assert image_name("libsigc++") == "libsigcxx"
    assert pkg_version("1.21.1", 0) == "1.21.1" and pkg_version("1.21.1", 1) == "1.21.1_1"
    assert oci_tag("1.21.1_1", 0) == "1.21.1_1" and oci_tag("3.5.0", 2) == "3.5.0-2"
    assert split_oci_tag("3.5.0_1-2") == ("3.5.0_1", 2) and split_oci_tag("3.5.0") == ("3.5.0", 0)
    assert upstream_version("3.5.0_1") == "3.5.0" and upstream_version("2024a") == "2024a"
    with pytest.raises(ValueError):
        oci_tag("bad tag", 0)


def test_platform_tags_exact_then_all_then_older_macos() -> None:
    assert platform_tags(LINUX) == ("x86_64_linux", "all")
    assert platform_tags(ARM_LINUX) == ("arm64_linux", "all")
    assert platform_tags(MAC, 15) == (
        "arm64_sequoia",
        "all",
        "arm64_sonoma",
        "arm64_ventura",
        "arm64_monterey",
        "arm64_big_sur",
    )
    assert platform_tags(INTEL_MAC, 14)[:3] == ("sonoma", "all", "ventura")
    assert platform_tags(MAC)[0] == "arm64_tahoe"  # release unknown: newest first


def _entry(ref: str) -> dict[str, object]:
    return {
        "digest": "sha256:" + "0" * 64,
        "annotations": {"org.opencontainers.image.ref.name": ref},
    }


def test_index_entries_by_bottle_tag_with_and_without_rebuild() -> None:
    index = {
        "manifests": [
            _entry("1.2_1.x86_64_linux"),
            _entry("1.2_1.arm64_sonoma"),
            _entry("1.2_1.x86_64_linux.2"),
            _entry("1.2_10.x86_64_linux"),
            {"no": "annotations"},
        ]
    }
    assert sorted(index_entries(index, "1.2_1", 0)) == ["arm64_sonoma", "x86_64_linux"]
    assert list(index_entries(index, "1.2_1", 2)) == ["x86_64_linux"]
    assert index_entries(index, "1.2_1", 3) == {}


def test_a_requested_version_picks_its_newest_revision_and_rebuild() -> None:
    tags = ["3.3.0", "3.3.0_1", "3.3.0_1-2", "3.3.01", "3.4.0"]
    assert pick_tag_for("3.3.0", tags) == "3.3.0_1-2"
    assert pick_tag_for("3.4.0", tags) == "3.4.0"
    assert pick_tag_for("3.3", tags) is None


def test_formula_of_a_recipe() -> None:
    bottle = '[metadata]\nname = "htop"\n\n[[steps]]\naction = "homebrew"\nformula = "htop"\n'
    assert formula_of(parse_recipe(bottle)) == "htop"
    library = (
        '[metadata]\nname = "ncurses"\n\n[version]\nsource = "homebrew"\nformula = "ncurses"\n'
    )
    assert formula_of(parse_recipe(library)) == "ncurses"
    mixed = bottle + (
        '\n[[steps]]\naction = "github_file"\nrepo = "a/b"\nasset_pattern = "x"\nbinary = "x"\n'
    )
    assert formula_of(parse_recipe(mixed)) is None  # GitHub decides the version there


def test_dependencies_install_deepest_first_and_cycles_are_named() -> None:
    graph = {"wget": ("libidn2", "openssl@3"), "libidn2": ("libunistring",), "openssl@3": ()}
    assert install_order("wget", graph) == ["libunistring", "libidn2", "openssl@3"]
    with pytest.raises(DependencyCycle, match="cycle: a → b → c → a"):
        install_order("a", {"a": ("b",), "b": ("c",), "c": ("a",)})


INSTALLED = {
    "libgreet": {"version": "1.0", "install_dir": "/t/libgreet-1.0"},
    "hello": {"version": "2.0", "runtime_dependencies": ["libgreet"]},
    "hola": {"version": "1.0", "runtime_dependencies": ["libgreet", "gone"]},
    "age": {"version": "1.2.0"},
}


def test_a_dependency_keeps_its_version_while_tools_need_it() -> None:
    assert dependents(INSTALLED, "libgreet") == ["hello", "hola"]
    assert dependents(INSTALLED, "age") == []
    with pytest.raises(DependencyInUse) as caught:
        refuse_version_change(INSTALLED, "libgreet", "1.1")
    exc = caught.value
    assert exc.code == "dependency_in_use"
    assert exc.message.startswith("libgreet 1.0 is needed by hello, hola")
    assert "/t/libgreet-1.0" in exc.message and "installing libgreet 1.1" in exc.message
    assert exc.hint is not None and "tsukuctl remove hello" in exc.hint
    assert "then install hello, hola again" in exc.hint
    # The same version (a --force reinstall keeps the path), a tool nothing needs, and
    # a first install are not refused.
    refuse_version_change(INSTALLED, "libgreet", "1.0")
    refuse_version_change(INSTALLED, "age", "1.3.0")
    refuse_version_change(INSTALLED, "newtool", "1.0")


BUILT = {
    "libbuild": {"version": "1.0", "install_dir": "/t/libbuild-1.0"},
    "greeter": {
        "version": "2.0",
        "build": {
            "image": "tsuku/validate-build:local",
            "kind": "configure_make",
            "dependencies": {"libbuild": "/t/libbuild-1.0"},
        },
    },
    "bottled": {"version": "1.0", "build": None, "runtime_dependencies": None},
}


def test_a_tool_built_against_a_dependency_keeps_it_as_tsuku_keeps_install_time_ones() -> None:
    """tsuku records an install-time dependency's ``RequiredBy`` and refuses its removal;
    a build here mounted it at its path, so the output may load it from there."""
    assert needs(BUILT["greeter"]) == ["libbuild"]
    assert needs({"runtime_dependencies": ["a"], "build": {"dependencies": {"a": "/", "b": "/"}}})
    assert needs(BUILT["bottled"]) == []
    assert dependents(BUILT, "libbuild") == ["greeter"]
    with pytest.raises(DependencyInUse, match=r"libbuild 1\.0 is needed by greeter"):
        refuse_version_change(BUILT, "libbuild", "1.1")
    without_greeter = {k: v for k, v in BUILT.items() if k != "greeter"}
    assert unneeded(without_greeter, "greeter", needs(BUILT["greeter"])) == ["libbuild"]


def test_dependencies_nothing_needs_after_a_remove() -> None:
    assert unneeded(INSTALLED, "hello", ["libgreet"]) == []  # hola still needs it
    without_hola = {k: v for k, v in INSTALLED.items() if k != "hola"}
    assert unneeded(without_hola, "hello", ["libgreet"]) == ["libgreet"]
    assert unneeded(INSTALLED, "hola", ["libgreet", "gone"]) == []  # gone: not installed
    # The removed tool's own record (still in a stale view) does not count as a need.
    assert unneeded(without_hola, "hello", ["libgreet"]) == unneeded(
        {k: v for k, v in without_hola.items() if k != "hello"}, "hello", ["libgreet"]
    )


def test_two_bottles_make_one_relocation_record() -> None:
    one = {"text_files": 1, "elf_files": 2, "macho_files": 0, "left_alone": [{"file": "a"}]}
    two = {"text_files": 3, "elf_files": 0, "macho_files": 1, "left_alone": [{"file": "b"}]}
    assert merge_summaries(None, one) == one
    assert merge_summaries(one, two) == {
        "text_files": 4,
        "elf_files": 2,
        "macho_files": 1,
        "left_alone": [{"file": "a"}, {"file": "b"}],
    }


def test_placeholders_longest_first() -> None:
    table = replacements("hello", "2.0_1", Path("/t/hello-2.0"), {"libgreet": Path("/t/lg-1")})
    keys = [k for k, _ in table]
    assert keys.index("@@HOMEBREW_CELLAR@@/hello/2.0_1") < keys.index("@@HOMEBREW_CELLAR@@")
    assert dict(table)["@@HOMEBREW_PREFIX@@/opt/libgreet"] == "/t/lg-1"
    assert dict(table)["@@HOMEBREW_CELLAR@@"] == "/t"
    assert dict(table)["@@HOMEBREW_PERL@@"] == "/usr/bin/perl"
    with_perl = replacements("git", "2.0", Path("/t/git-2.0"), {"perl": Path("/t/perl-5.40")})
    assert dict(with_perl)["@@HOMEBREW_PERL@@"] == "/t/perl-5.40/bin/perl"


OPENSSL = """[metadata]
name = "openssl"
type = "library"

[[steps]]
action = "homebrew"
formula = "openssl@3"
"""


async def test_a_dependency_is_found_under_its_formula_not_only_its_recipe_name(
    tmp_path: Path,
) -> None:
    """Homebrew keys ``opt/`` by formula: curl's bottle names ``opt/openssl@3``, while
    tsuku's recipe for it is ``openssl``. Keyed by the recipe name alone, the text
    ``opt/openssl@3/lib`` would become ``<openssl's dir>@3/lib``."""
    ssl_dir = tmp_path / "tools" / "openssl-3.3.1"
    curl = parse_recipe(
        '[metadata]\nname = "curl"\nruntime_dependencies = ["openssl"]\n\n'
        '[[steps]]\naction = "homebrew"\nformula = "curl"\n'
    )

    async def load(name: str) -> Recipe:
        assert name == "openssl"
        return parse_recipe(OPENSSL)

    async def install(name: str) -> str:
        return str(ssl_dir)

    deps = await install_dependencies(curl, load, dict, install)
    assert deps.dirs == {"openssl": ssl_dir}
    assert deps.formulas == {"openssl": "openssl@3"}

    keg = tmp_path / "curl-8.10"
    (keg / "bin").mkdir(parents=True)
    config = keg / "bin" / "curl-config"
    config.write_text(
        "#!/bin/sh\n"
        "ssl=@@HOMEBREW_PREFIX@@/opt/openssl@3/lib\n"
        "old=@@HOMEBREW_PREFIX@@/opt/openssl/lib\n"
        "own=@@HOMEBREW_PREFIX@@/opt/curl/bin\n"
    )
    report = relocate_keg(
        keg, keg, formula="curl", pkg_version="8.10", deps=deps.dirs, formulas=deps.formulas
    )
    assert config.read_text() == (
        f"#!/bin/sh\nssl={ssl_dir}/lib\nold={ssl_dir}/lib\nown={keg}/bin\n"
    )
    assert report.text_files == ["bin/curl-config"] and report.left_alone == []

    # A formula is Homebrew's key: it wins over another dependency's recipe name.
    table = dict(
        replacements(
            "curl",
            "8.10",
            keg,
            {"libssl": Path("/t/a"), "openssl": Path("/t/b")},
            {"libssl": "openssl", "openssl": "openssl@3"},
        )
    )
    assert table["@@HOMEBREW_PREFIX@@/opt/openssl"] == "/t/a"
    assert table["@@HOMEBREW_PREFIX@@/opt/openssl@3"] == "/t/b"
    assert table["@@HOMEBREW_PREFIX@@/opt/libssl"] == "/t/a"
    # The perl runtime dependency is found by its formula too.
    perl = replacements("git", "2.0", keg, {"perl5": Path("/t/p")}, {"perl5": "perl"})
    assert dict(perl)["@@HOMEBREW_PERL@@"] == "/t/p/bin/perl"


def test_perl_is_replaced_and_unknown_placeholders_are_reported_not_hidden(
    tmp_path: Path,
) -> None:
    keg = tmp_path / "git-2.0"
    (keg / "bin").mkdir(parents=True)
    (keg / "libexec").mkdir()
    script = keg / "bin" / "git-send-email"
    script.write_text("#!@@HOMEBREW_PERL@@\nuse lib '@@HOMEBREW_PREFIX@@/share/perl5';\n")
    java = keg / "libexec" / "run-java"
    java.write_text("#!/bin/sh\nexec @@HOMEBREW_JAVA@@/bin/java -cp @@HOMEBREW_PREFIX@@/x\n")
    odd = keg / "libexec" / "odd.cfg"
    odd.write_text("home=@@HOMEBREW_SOMETHING_NEW@@\n")
    clean = keg / "README"
    clean.write_text("no placeholders here\n")

    report = relocate_keg(keg, keg, formula="git", pkg_version="2.0", deps={})

    assert script.read_text() == f"#!/usr/bin/perl\nuse lib '{keg}/share/perl5';\n"
    # What could be replaced was; what could not stays, and the report names it.
    assert java.read_text() == f"#!/bin/sh\nexec @@HOMEBREW_JAVA@@/bin/java -cp {keg}/x\n"
    assert odd.read_text() == "home=@@HOMEBREW_SOMETHING_NEW@@\n"
    assert report.text_files == ["bin/git-send-email", "libexec/run-java"]
    assert report.summary()["left_alone"] == [
        {"file": "libexec/odd.cfg", "placeholders": ["@@HOMEBREW_SOMETHING_NEW@@"]},
        {"file": "libexec/run-java", "placeholders": ["@@HOMEBREW_JAVA@@"]},
    ]


# ---- the fake registry's rules ---------------------------------------------------------


@pytest.fixture
def brew() -> Iterator[FakeHomebrew]:
    with FakeHomebrew() as fake:
        yield fake


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {})) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def test_the_fake_registry_refuses_what_ghcr_refuses(brew: FakeHomebrew) -> None:
    tag = brew.publish("openssl@3", "3.5.0", {"x86_64_linux": b"bottle"})
    v2 = f"{brew.registry.url}/v2/homebrew/core/openssl/3"
    status, headers, body = _get(f"{v2}/manifests/{tag}")
    assert status == 401
    assert f'realm="{brew.registry.url}/token"' in headers["www-authenticate"]
    assert json.loads(body)["errors"][0]["code"] == "UNAUTHORIZED"
    assert len(brew.take_violations()) == 1

    scope = "repository:homebrew/core/openssl/3:pull"
    _, _, raw = _get(f"{brew.registry.url}/token?service=ghcr.io&scope={scope}")
    token = json.loads(raw)["token"]
    index = {
        "authorization": f"Bearer {token}",
        "accept": "application/vnd.oci.image.index.v1+json",
    }
    assert _get(f"{v2}/manifests/{tag}", index)[0] == 200
    status, _, body = _get(f"{v2}/manifests/9.9.9", index)
    assert status == 404 and json.loads(body)["errors"][0]["code"] == "MANIFEST_UNKNOWN"
    status, _, body = _get(f"{v2}/blobs/sha256:{'0' * 64}", index)
    assert status == 404 and json.loads(body)["errors"][0]["code"] == "BLOB_UNKNOWN"
    # A token is good for its image only.
    other = f"{brew.registry.url}/v2/homebrew/core/wget/manifests/1.0"
    assert _get(other, index)[0] == 401
    assert _get(f"{brew.registry.url}/token?service=docker.io&scope={scope}")[0] == 400
    assert len(brew.take_violations()) == 2


# ---- the client over the real HTTP layer -----------------------------------------------


@pytest.fixture
async def client(brew: FakeHomebrew) -> AsyncIterator[HomebrewClient]:
    http = Http(allowed_hosts=lambda: {"127.0.0.1"})
    yield HomebrewClient(http, api_url=lambda: brew.api.url, registry_url=lambda: brew.registry.url)
    await http.aclose()


async def test_the_client_resolves_finds_and_downloads_a_bottle(
    brew: FakeHomebrew, client: HomebrewClient, tmp_path: Path
) -> None:
    tarball = bottle_tarball("hello", "2.0_1", {"bin/hello": b"#!/bin/sh\necho hi\n"})
    brew.publish("hello", "1.5", {"x86_64_linux": b"old"}, current=False)
    brew.publish(
        "hello", "2.0", {"x86_64_linux": tarball, "arm64_sonoma": b"mac"}, revision=1, rebuild=1
    )
    resolved = await client.resolve("hello", None)
    assert (resolved.version, resolved.tag) == ("2.0", "2.0_1-1")
    assert (await client.resolve("hello", "1.5")).tag == "1.5"
    with pytest.raises(
        VersionNotFound, match=r"no Homebrew bottle of hello 0\.1; the registry has: 1\.5, 2\.0"
    ):
        await client.resolve("hello", "0.1")
    with pytest.raises(VersionNotFound, match="Homebrew has no formula named nope"):
        await client.resolve("nope", None)

    bottle = await client.bottle("hello", resolved.tag, LINUX)
    assert bottle.ref.platform_tag == "x86_64_linux" and bottle.available == (
        "arm64_sonoma",
        "x86_64_linux",
    )
    got = await download(client.http, bottle.ref.url, tmp_path / "b.tgz", headers=bottle.headers)
    assert got.sha256 == bottle.ref.sha256 and got.final_url.startswith(brew.storage.url)
    assert all("authorization" not in r.headers for r in brew.blob_requests())
    extract(tmp_path / "b.tgz", tmp_path / "keg", ArchiveFormat.TAR_GZ, strip_dirs=2)
    assert (tmp_path / "keg" / "bin" / "hello").read_bytes() == b"#!/bin/sh\necho hi\n"

    with pytest.raises(UnsupportedPlatform, match="bottles exist for: arm64_sonoma, x86_64_linux"):
        await client.bottle("hello", resolved.tag, ARM_LINUX)


async def test_an_index_and_manifest_that_disagree_are_refused(
    brew: FakeHomebrew, client: HomebrewClient
) -> None:
    tag = brew.publish("hello", "2.0", {"x86_64_linux": b"one"})
    image = brew.images["hello"]
    index = json.loads(image.indexes[tag])
    index["manifests"][0]["annotations"]["sh.brew.bottle.digest"] = "f" * 64
    image.indexes[tag] = json.dumps(index).encode()
    with pytest.raises(HomebrewError, match="its manifest says"):
        await client.bottle("hello", tag, LINUX)
    digest = index["manifests"][0]["digest"]
    image.manifests[digest] = image.manifests[digest] + b" "
    with pytest.raises(HomebrewError, match="the index says"):
        await client.bottle("hello", tag, LINUX)


# ---- relocation of a real keg ----------------------------------------------------------


def _dynamic(path: Path) -> str:
    return subprocess.run(
        ["readelf", "-d", "-l", str(path)], capture_output=True, text=True, check=True
    ).stdout


@needs_gcc
def test_relocation_makes_the_bottle_run_and_leaves_binary_data_alone(tmp_path: Path) -> None:
    built = bottles.build(tmp_path / "build")
    tools = tmp_path / "tools"
    for name, tarball in (
        ("libgreet-1.0", bottles.libgreet_bottle(built)),
        ("hello-2.0", bottles.hello_bottle(built, "2.0")),
    ):
        archive = tmp_path / f"{name}.tar.gz"
        archive.write_bytes(tarball)
        extract(archive, tools / name, ArchiveFormat.TAR_GZ, strip_dirs=2)
    lib, tool = tools / "libgreet-1.0", tools / "hello-2.0"
    relocate_keg(lib, lib, formula="libgreet", pkg_version="1.0", deps={})
    with pytest.raises(FileNotFoundError):  # its interpreter is a placeholder path
        subprocess.run([str(tool / "bin" / "hello")], capture_output=True, check=False)

    mode = (tool / "bin" / "hello").stat().st_mode
    report = relocate_keg(tool, tool, formula="hello", pkg_version="2.0", deps={"libgreet": lib})
    assert report.elf_files == ["bin/hello"] and report.text_files == ["bin/hello-config"]
    # Relocated, but its C string still names the prefix: reported, like the data file.
    assert report.left_alone == ["bin/hello", "share/hello/blob.bin"]
    assert report.summary() == bottles.HELLO_RELOCATION
    ran = subprocess.run([str(tool / "bin" / "hello")], capture_output=True, text=True, check=True)
    assert ran.stdout.startswith(bottles.GREETING)
    # The C string keeps its placeholder (length 23 + 10): only the loader's paths moved.
    assert f"[{len('@@HOMEBREW_PREFIX@@/etc/hello')}]" in ran.stdout
    dynamic = _dynamic(tool / "bin" / "hello")
    assert "(RPATH)" in dynamic and "RUNPATH" not in dynamic
    assert "$ORIGIN/../lib:$ORIGIN/../../libgreet-1.0/lib" in dynamic
    assert "@@HOMEBREW" not in dynamic
    assert (tool / "share" / "hello" / "blob.bin").read_bytes() == bottles.BLOB
    assert (tool / "bin" / "hello").stat().st_mode == mode


HTOP = """[metadata]
  name = "htop"
  runtime_dependencies = ["ncurses"]
  supported_os = ["darwin", "linux"]

[[steps]]
  action = "homebrew"
  formula = "htop"

[[steps]]
  action = "install_binaries"
  binaries = ["bin/htop"]

[verify]
  command = "htop --version"
  pattern = "htop {version}"
"""
NCURSES = """[metadata]
name = "ncurses"
type = "library"

[version]
source = "homebrew"
formula = "ncurses"

[[steps]]
action = "homebrew"
formula = "ncurses"
when = { os = ["linux"], libc = ["glibc"] }
"""


def test_registry_coverage_counts_homebrew_recipes_as_supported(tmp_path: Path) -> None:
    from tests.unit.recipe.test_registry_quirks import _bench

    (tmp_path / "htop.toml").write_text(HTOP)
    (tmp_path / "ncurses.toml").write_text(NCURSES)
    report = _bench().measure(sorted(tmp_path.glob("*.toml")))
    assert report.lines()[-1] == "parsed 2/2, supported 2/2"
    assert report.unsupported == {}


def test_static_checks_accept_a_homebrew_recipe() -> None:
    from tsukud.create.static_checks import binary_paths, check_on_paper

    htop = parse_recipe(HTOP)
    assert binary_paths(htop) == {"bin/htop"}
    assert check_on_paper(htop) == []


def test_the_builder_writes_the_recipe_from_the_formula_and_its_index() -> None:
    from tsukud.create.errors import CreateError
    from tsukud.create.homebrew_builder import recipe_from_formula
    from tsukud.source import BadSource, HomebrewFormula, parse_source

    formula = {
        "name": "wget",
        "desc": "Internet file retriever",
        "homepage": "https://www.gnu.org/software/wget/",
        "dependencies": ["libidn2", "openssl@3", "gettext"],
        "variations": {"x86_64_linux": {"dependencies": ["libidn2", "openssl@3"]}},
    }
    exec_files = {"annotations": {"sh.brew.path_exec_files": "bin/wget,share/x,bin/a"}}
    entries = {"x86_64_linux": exec_files, "arm64_sonoma": exec_files}
    text = recipe_from_formula("wget", formula, entries, LINUX)
    recipe = parse_recipe(text)
    assert recipe.metadata.runtime_dependencies == ("libidn2", "openssl@3")
    assert recipe.metadata.unsupported_platforms == ("linux/arm64", "darwin/amd64")
    assert [b.src for b in recipe.steps[1].binaries] == ["bin/a", "bin/wget"]  # type: ignore[union-attr]
    assert recipe.verify is not None and recipe.verify.command == "wget --version"
    assert recipe_from_formula("wget", formula, entries, LINUX) == text
    with pytest.raises(CreateError, match="list no commands"):
        recipe_from_formula("ncurses", {"name": "ncurses"}, {"x86_64_linux": {}}, LINUX)
    assert parse_source("homebrew:openssl@3") == HomebrewFormula("openssl@3")
    assert not isinstance(parse_source("github:o/r"), HomebrewFormula)
    with pytest.raises(BadSource):
        parse_source("homebrew:../x y")


def test_info_shows_a_bottle_steps_formula() -> None:
    from tsukud.recipe import HomebrewStep, step_summary

    assert step_summary(HomebrewStep(formula="htop")) == {"action": "homebrew", "formula": "htop"}
