"""Constructs of tsuku's registry read with tsuku's meaning (issue 30, item 1): each
recipe here is a small one of our own in the shape a registry recipe uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.recipe.test_registry_quirks import _bench
from tsukud.install.ecosystem.versions import version_package
from tsukud.recipe import (
    Platform,
    RecipeParseError,
    ResolvedVersion,
    dump_recipe,
    parse_recipe,
    render_recipe,
    require_supported,
    unknown_keys,
    unsupported_actions,
)
from tsukud.recipe.model import AmbiguousAsset, Binary, EcosystemStep, InstallBinariesStep
from tsukud.recipe.plan import plan_recipe
from tsukud.recipe.render import takes_first_match

LINUX = Platform("linux", "amd64", "glibc")
V = ResolvedVersion("12.6.77", "12.6.77")


def test_outputs_as_tables_read_and_write_back() -> None:
    """ca-certificates: ``outputs = [{ src, dest }]`` is a file the tool exports, not a
    command (it does not land under bin/); a table landing under bin/ is one."""
    text = """[metadata]
name = "certs"

[[steps]]
action = "download_file"
url = "https://example.test/cacert.pem"
checksum = "f1407d974c5ed87d544bd931a278232e13925177e239fca370619aba63c757b4"
dest = "cacert.pem"

[[steps]]
action = "install_binaries"
outputs = [
    { src = "cacert.pem", dest = "share/ca-certificates/cacert.pem" },
    { src = "tool.sh", dest = "bin/tool" },
]
"""
    recipe = parse_recipe(text)
    step = recipe.steps[1]
    assert isinstance(step, InstallBinariesStep)
    assert step.outputs == (
        Binary("cacert.pem", "share/ca-certificates/cacert.pem"),
        Binary("tool.sh", "bin/tool"),
    )
    assert step.binaries == (Binary("tool.sh", "bin/tool"),)
    assert parse_recipe(dump_recipe(recipe)) == recipe
    assert "binaries =" not in dump_recipe(recipe)
    with pytest.raises(RecipeParseError, match=r"outputs\[0\]\.dest: expected a relative path"):
        parse_recipe(text.replace("share/ca-certificates/cacert.pem", "/etc/ssl/cacert.pem"))


CUDA_LIKE = """[metadata]
name = "cudart"
type = "library"

[[steps]]
action = "download_archive"
url = "https://example.test/cudart-linux-x86_64-{version}-archive.tar.xz"
when = { os = ["linux"], arch = "amd64" }
strip_dirs = 1

[[steps]]
action = "install_binaries"
install_mode = "directory"
outputs = ["lib/libcudart.so", "lib/libcudart.so.12"]
"""

LIBCAP_LIKE = """[metadata]
name = "libcaplike"
type = "library"

[[steps]]
action = "homebrew"
formula = "libcap"
when = { os = ["linux"], libc = ["glibc"] }

[[steps]]
action = "install_binaries"
install_mode = "directory"
when = { os = ["linux"], libc = ["glibc"] }

[[steps]]
action = "apk_install"
packages = ["libcap-dev"]
when = { os = ["linux"], libc = ["musl"] }
"""


def test_the_two_registry_recipes_that_did_not_parse_now_do() -> None:
    """cuda-runtime: a download_archive without binaries downloads and unpacks; the
    install_binaries after it takes the tree. libcap: directory mode without outputs
    installs the whole bottle."""
    cuda = parse_recipe(CUDA_LIKE)
    (rendered,) = render_recipe(cuda, V, LINUX)
    assert rendered.install_mode == "directory" and rendered.binaries == ()
    assert rendered.strip_dirs == 1 and rendered.archive_format.value == "tar.xz"
    plan = plan_recipe(cuda, V, LINUX, install_dir="/t")
    assert [s.action for s in plan.steps] == ["download_file", "extract", "install_binaries"]
    assert plan.steps[2].params == {
        "install_mode": "directory",
        "outputs": ["lib/libcudart.so", "lib/libcudart.so.12"],
    }
    assert plan.recipe_type == "library"
    libcap = parse_recipe(LIBCAP_LIKE)
    step = libcap.steps[1]
    assert isinstance(step, InstallBinariesStep) and step.binaries == () and step.outputs is None
    assert parse_recipe(dump_recipe(libcap)) == libcap


KNOWN_KEYS = """[metadata]
name = "keys"
extra_dependencies = ["zlib"]

[version]
source = "homebrew"
formula = "keys-formula"
cask = "keys-cask"
module = "example.com/keys"

[[steps]]
action = "homebrew"
formula = "keys"

[[steps]]
action = "install_binaries"
binaries = ["bin/keys"]
files = ["bin/keys"]
os_mapping = { darwin = "macos" }
"""


def test_the_registrys_other_keys_read_with_tsukus_meaning_or_as_known_ignored() -> None:
    recipe = parse_recipe(KNOWN_KEYS)
    assert recipe.metadata.extra_dependencies == ("zlib",)
    assert recipe.version is not None
    assert (recipe.version.formula, recipe.version.cask, recipe.version.module) == (
        "keys-formula",
        "keys-cask",
        "example.com/keys",
    )
    # files/os_mapping where the action has no use for them: ignored, as tsuku does;
    # neither news nor a parameter install refuses, and written back as they were.
    assert unknown_keys(recipe) == []
    assert unsupported_actions(recipe) == []
    assert [i for i, _ in require_supported(recipe, LINUX)] == [0, 1]
    assert parse_recipe(dump_recipe(recipe)) == recipe
    # A key nobody knows is still news and still refused where install would need it.
    odd = parse_recipe(KNOWN_KEYS.replace("files = ", "shiny = "))
    assert unknown_keys(odd) == ["steps[1].shiny"]
    assert unsupported_actions(odd) == ["install_binaries parameter shiny"]


WILDCARD = """[metadata]
name = "py"

[[steps]]
action = "github_archive"
repo = "o/py"
asset_pattern = "cpython-*+{version}-x86_64-linux.tar.gz"
binaries = ["bin/python3"]
"""
ASSETS = [
    "cpython-3.10.1+2025-x86_64-linux.tar.gz",
    "cpython-3.12.1+2025-x86_64-linux.tar.gz",
    "cpython-3.10.1+2025-aarch64-linux.tar.gz",
]


def test_a_registry_wildcard_takes_the_first_match_and_a_written_one_refuses() -> None:
    v = ResolvedVersion("2025", "2025")
    registry = parse_recipe(WILDCARD)
    assert takes_first_match(registry)
    # Rendering is strict unless told (create's checks and validation never pick).
    with pytest.raises(AmbiguousAsset, match="matches 2 assets"):
        render_recipe(registry, v, LINUX, assets=ASSETS)
    (taken,) = render_recipe(registry, v, LINUX, assets=ASSETS, take_first=True)
    assert taken.asset_name == ASSETS[0]
    assert taken.warning is not None and ASSETS[1] in taken.warning
    assert ASSETS[2] not in taken.warning
    written = WILDCARD.replace('name = "py"', 'name = "py"\ngenerated_by = "tsuku 0.1.0"')
    assert not takes_first_match(parse_recipe(written))
    # One match is one match either way: no warning.
    (one,) = render_recipe(registry, v, LINUX, assets=ASSETS[:1], take_first=True)
    assert one.warning is None


ZIG_LIKE = """[metadata]
name = "z"

[[steps]]
action = "download"
url = "https://a.test/z-{arch}-{version}.tar.xz"
fallback_urls = ["https://b.test/z-{arch}-{version}.tar.xz"]
arch_mapping = { amd64 = "x86_64" }

[[steps]]
action = "extract"
archive = "z-{arch}-{version}.tar.xz"
arch_mapping = { amd64 = "x86_64" }

[[steps]]
action = "install_binaries"
binaries = ["z"]
"""


def test_fallback_urls_read_as_urls_and_render_with_the_step() -> None:
    text = ZIG_LIKE
    recipe = parse_recipe(text)
    (rendered,) = render_recipe(recipe, ResolvedVersion("1.0", "1.0"), LINUX)
    assert rendered.url == "https://a.test/z-x86_64-1.0.tar.xz"
    assert rendered.fallback_urls == ("https://b.test/z-x86_64-1.0.tar.xz",)
    assert rendered.archive_format.value == "tar.xz"  # the extract found the mapped name
    assert parse_recipe(dump_recipe(recipe)) == recipe
    with pytest.raises(RecipeParseError, match=r"fallback_urls\[0\]: expected an https:// URL"):
        parse_recipe(text.replace('["https://b.test', '["file:///b.test'))


ZIG_ARCHIVE = """[metadata]
name = "z"

[[steps]]
action = "download_archive"
url = "https://a.test/z-{arch}-{os}-{version}.tar.xz"
fallback_urls = ["https://b.test/{version}/z-{arch}-{os}-{version}.tar.xz"]
checksum_url = "https://a.test/z-{version}.sha256"
strip_dirs = 1
binaries = ["z"]
os_mapping = { darwin = "macos" }
arch_mapping = { amd64 = "x86_64" }
"""


def test_download_archive_fallback_urls_render_with_the_steps_mappings() -> None:
    """tsuku's zig: the mirrors of a ``download_archive`` are filled in as its ``url``
    is (mappings included), reach the install beside the checks the URL is held to,
    and write back as read."""
    recipe = parse_recipe(ZIG_ARCHIVE)
    (step,) = recipe.steps
    assert step.extra == {}  # modelled, not an unknown parameter
    (rendered,) = render_recipe(recipe, ResolvedVersion("1.0", "1.0"), Platform("darwin", "amd64"))
    assert rendered.url == "https://a.test/z-x86_64-macos-1.0.tar.xz"
    assert rendered.fallback_urls == ("https://b.test/1.0/z-x86_64-macos-1.0.tar.xz",)
    assert rendered.checksum_url == "https://a.test/z-1.0.sha256"
    assert rendered.strip_dirs == 1 and [b.src for b in rendered.binaries or ()] == ["z"]
    written = dump_recipe(recipe)
    assert 'fallback_urls = ["https://b.test/{version}/' in written
    assert parse_recipe(written) == recipe
    with pytest.raises(RecipeParseError, match=r"fallback_urls\[0\]: expected an https:// URL"):
        parse_recipe(ZIG_ARCHIVE.replace('["https://b.test', '["file:///b.test'))


def test_a_goproxy_version_source_takes_its_module_from_the_version_section() -> None:
    """``[version] module`` (tsuku's key, now modelled) names the module whose versions a
    go_install of a package inside it installs."""
    text = """[metadata]
name = "gotool"

[version]
source = "goproxy"
module = "example.com/suite"

[[steps]]
action = "go_install"
module = "example.com/suite/tools/gotool"
executables = ["gotool"]
"""
    recipe = parse_recipe(text)
    step = recipe.steps[0]
    assert isinstance(step, EcosystemStep) and step.action == "go_install"
    assert version_package(step, recipe.version) == "example.com/suite"
    bare = parse_recipe(text.replace('module = "example.com/suite"\n', ""))
    assert version_package(step, bare.version) == "example.com/suite/tools/gotool"


def test_the_coverage_bench_counts_per_action_the_recipes_that_plan(tmp_path: Path) -> None:
    """Issue 30 item 5's first half: per action, the recipes using it and those of
    them that plan it on every standard platform where it serves."""
    (tmp_path / "zig.toml").write_text(ZIG_LIKE)
    (tmp_path / "py.toml").write_text(WILDCARD)  # a wildcard: stood in by one asset
    (tmp_path / "init.toml").write_text(
        ZIG_LIKE.replace('name = "z"', 'name = "r"')
        + '\n[[steps]]\naction = "nix_install"\npackages = ["z"]\n'
    )
    report = _bench().measure(sorted(tmp_path.glob("*.toml")))
    assert dict(report.uses) == {
        "download": 2,
        "extract": 2,
        "install_binaries": 2,
        "github_archive": 1,
        "nix_install": 1,
    }
    assert dict(report.plans) == {
        "download": 2,
        "extract": 2,
        "install_binaries": 2,
        "github_archive": 1,
        "nix_install": 0,
    }
    assert "      0/1      nix_install" in report.lines()
