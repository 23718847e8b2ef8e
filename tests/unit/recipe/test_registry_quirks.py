"""The registry's own spelling is read with tsuku's semantics (empty string = unset,
``when.arch`` a string or a list, ``os/arch/libc`` platforms, unknown keys kept and
reported), and its URL actions render to the download the installer runs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO
from tests.shared import RECIPES, require
from tsukud.recipe import (
    ArchiveFormat,
    DownloadStep,
    Platform,
    RecipeError,
    RecipeParseError,
    ResolvedVersion,
    UnsupportedAction,
    UnsupportedFeature,
    UnsupportedPlatform,
    check_platform,
    dump_recipe,
    matching_steps,
    parse_recipe,
    render_recipe,
    require_supported,
    unknown_keys,
    unsupported_actions,
)
from tsukud.recipe.version import json_path_value

LINUX = Platform("linux", "amd64", "glibc")
LINUX_ARM_MUSL = Platform("linux", "arm64", "musl")
LINUX_ARM = Platform("linux", "arm64", "glibc")
V = ResolvedVersion("1.30.2", "v1.30.2")

BATCH = """[metadata]
name = "tool"
description = ""
homepage = ""
unsupported_platforms = ["linux/arm64/musl"]
shiny_new_key = "kept"

[version]
source = ""
github_repo = ""
tag_prefix = ""
formula = ""
module = ""

[[steps]]
action = "github_archive"
repo = "o/tool"
asset_pattern = "tool-{os}-{arch}.tar.gz"
archive_format = ""
checksum_url = ""
binaries = ["tool"]
when = { os = "linux", arch = ["amd64", "arm64"] }
"""


def test_empty_strings_are_unset_where_a_value_is_required() -> None:
    recipe = parse_recipe(BATCH)
    assert recipe.version is not None
    assert recipe.version.github_repo is None and recipe.version.source is None
    step = recipe.steps[0]
    assert step.archive_format is None and step.checksum_url is None
    # "" is a value where the format allows one, so the text reads back as written.
    assert recipe.metadata.description == ""
    assert parse_recipe(dump_recipe(recipe)) == recipe
    assert require_supported(recipe, LINUX)


def test_when_arch_may_be_a_list_and_a_single_arch_writes_back_as_a_string() -> None:
    recipe = parse_recipe(BATCH)
    assert [len(matching_steps(recipe, p)) for p in (LINUX, LINUX_ARM)] == [1, 1]
    assert matching_steps(recipe, Platform("linux", "386", "glibc")) == []
    single = parse_recipe(BATCH.replace('arch = ["amd64", "arm64"]', 'arch = "arm64"'))
    assert 'arch = "arm64"' in dump_recipe(single)
    assert [len(matching_steps(single, p)) for p in (LINUX, LINUX_ARM)] == [0, 1]


def test_a_platform_with_a_libc_names_only_that_libc() -> None:
    recipe = parse_recipe(BATCH)
    check_platform(recipe, LINUX_ARM)  # glibc arm64 is fine
    with pytest.raises(UnsupportedPlatform, match="linux/arm64"):
        check_platform(recipe, LINUX_ARM_MUSL)
    with pytest.raises(RecipeError, match=r'"os/arch" pair \(or "os/arch/libc"\)'):
        parse_recipe(BATCH.replace("linux/arm64/musl", "linux/arm64/bionic"))


def test_unknown_keys_are_kept_and_reported() -> None:
    recipe = parse_recipe(BATCH)
    # formula = "" and module = "" are the batch generator's "unset": kept, not news.
    assert unknown_keys(recipe) == ["metadata.shiny_new_key"]
    text = dump_recipe(recipe)
    assert 'shiny_new_key = "kept"' in text and 'module = ""' in text
    # tsuku's [version] module (a Go source's module path) is modelled: read, not news.
    named = parse_recipe(BATCH.replace('module = ""', 'module = "example.com/tool"'))
    assert unknown_keys(named) == ["metadata.shiny_new_key"]
    assert named.version is not None and named.version.module == "example.com/tool"


KUBECTL = """[metadata]
name = "kubectl"

[version]
source = "http_json"
url = "https://dl.k8s.io/release/stable.json"
version_path = "version"

[[steps]]
action = "download"
url = "https://dl.k8s.io/release/{version_tag}/bin/{os}/{arch}/kubectl"
checksum_url = "https://dl.k8s.io/release/{version_tag}/bin/{os}/{arch}/kubectl.sha256"
arch_mapping = { amd64 = "x86_64" }

[[steps]]
action = "chmod"
files = ["kubectl"]

[[steps]]
action = "install_binaries"
binaries = ["kubectl"]
"""


def test_a_kubectl_shaped_recipe_renders_to_one_raw_download() -> None:
    (step,) = render_recipe(parse_recipe(KUBECTL), V, LINUX)
    assert step.url == "https://dl.k8s.io/release/v1.30.2/bin/linux/x86_64/kubectl"
    assert step.checksum_url == step.url + ".sha256"
    assert step.archive_format is ArchiveFormat.RAW and step.download_name == "kubectl"
    assert step.chmod == ("kubectl",) and step.repo == ""
    assert [(b.src, b.dest) for b in step.binaries] == [("kubectl", "bin/kubectl")]


def test_download_then_extract_folds_into_one_archive_step() -> None:
    text = KUBECTL.replace('files = ["kubectl"]', 'files = ["linux-amd64/helm"]').replace(
        "kubectl.sha256", "helm.tar.gz.sha256"
    )
    text = text.replace('/kubectl"\n', '/helm.tar.gz"\n', 1).replace(
        '[[steps]]\naction = "chmod"',
        '[[steps]]\naction = "extract"\narchive = "helm.tar.gz"\nstrip_dirs = 1\n\n'
        '[[steps]]\naction = "chmod"',
    )
    (step,) = render_recipe(parse_recipe(text), V, LINUX)
    assert step.archive_format is ArchiveFormat.TAR_GZ and step.strip_dirs == 1
    assert step.asset_name == "helm.tar.gz"


NODE = """[metadata]
name = "node"
[version]
source = "http_json"
url = "https://nodejs.org/dist/index.json"
version_path = "0.version"
[[steps]]
action = "download_archive"
url = "https://nodejs.org/dist/v{version}/node-v{version}-{os}-{arch}.tar.xz?x=1"
strip_dirs = 1
install_mode = "directory"
binaries = ["bin/node", "bin/npm"]
[verify]
command = "{install_dir}/bin/node --version"
pattern = "v{version}"
"""


def test_download_archive_in_directory_mode_keeps_paths() -> None:
    (step,) = render_recipe(parse_recipe(NODE), V, LINUX)
    assert step.asset_name == "node-v1.30.2-linux-amd64.tar.xz"
    assert step.archive_format is ArchiveFormat.TAR_XZ and step.install_mode == "directory"
    assert [(b.src, b.dest) for b in step.binaries] == [
        ("bin/node", "bin/node"),
        ("bin/npm", "bin/npm"),
    ]


@pytest.mark.parametrize(
    ("change", "error", "fragment"),
    [
        (
            ('archive = "helm', 'archive = "other'),
            UnsupportedFeature,
            "extract of other.tar.gz",
        ),
        (
            (
                'action = "install_binaries"',
                'action = "download"\nurl = "https://x/two"\n'
                '[[steps]]\naction = "install_binaries"',
            ),
            UnsupportedFeature,
            "install_binaries over several downloads",
        ),
        (
            ('checksum_url = "https', 'checksum_algo = "sha512"\nchecksum_url = "https'),
            UnsupportedFeature,
            "checksum_algo sha512",
        ),
    ],
)
def test_shapes_that_cannot_be_mapped_are_refused_not_guessed(
    change: tuple[str, str], error: type[Exception], fragment: str
) -> None:
    text = KUBECTL.replace(
        '[[steps]]\naction = "chmod"',
        '[[steps]]\naction = "extract"\narchive = "helm.tar.gz"\n\n[[steps]]\naction = "chmod"',
    ).replace('/kubectl"\n', '/helm.tar.gz"\n', 1)
    with pytest.raises(error, match=fragment):
        render_recipe(parse_recipe(text.replace(*change)), V, LINUX)


def test_a_signed_download_is_modelled_and_half_a_signature_is_refused() -> None:
    fpr = "FB5D B77F D5C1 18B8 0511  ADA8 A631 0ACC 4672 475C"
    signed = KUBECTL.replace(
        "arch_mapping",
        'signature_url = "https://x/sig"\nsignature_key_url = "https://x/key.asc"\n'
        f'signature_key_fingerprint = "{fpr}"\narch_mapping',
    )
    step = parse_recipe(signed).steps[0]
    assert isinstance(step, DownloadStep) and step.extra == {}
    assert (step.signature_url, step.signature_key_fingerprint) == ("https://x/sig", fpr)
    assert unsupported_actions(parse_recipe(signed)) == []
    (rendered,) = render_recipe(parse_recipe(signed), V, LINUX)
    assert rendered.signature_url == "https://x/sig"
    assert rendered.signature_key_url == "https://x/key.asc"
    assert rendered.signature_key_fingerprint == fpr.replace(" ", "")
    half = KUBECTL.replace("arch_mapping", 'signature_url = "https://x/sig"\narch_mapping')
    with pytest.raises(RecipeParseError, match="come together"):
        parse_recipe(half)
    short = signed.replace(fpr, "4672475C")
    with pytest.raises(RecipeParseError, match="full OpenPGP key fingerprint"):
        parse_recipe(short)


def test_run_command_folds_into_the_download_it_follows() -> None:
    cmd = '[[steps]]\naction = "run_command"\ncommand = "./setup {version} {install_dir}"\n\n'
    run = KUBECTL.replace(
        '[[steps]]\naction = "install_binaries"', cmd + '[[steps]]\naction = "install_binaries"'
    )
    assert unsupported_actions(parse_recipe(run)) == []
    (step,) = render_recipe(parse_recipe(run), V, LINUX)
    assert step.commands == ((2, "./setup 1.30.2 {install_dir}"),)
    after = KUBECTL + "\n" + cmd
    with pytest.raises(UnsupportedFeature, match="run_command without an earlier download"):
        render_recipe(parse_recipe(after), V, LINUX)
    sudo = run.replace('command = "./setup', 'requires_sudo = true\ncommand = "./setup')
    with pytest.raises(UnsupportedFeature, match="parameter requires_sudo"):
        require_supported(parse_recipe(sudo), LINUX)
    assert unsupported_actions(parse_recipe(sudo)) == ["run_command parameter requires_sudo"]
    other = KUBECTL + '\n[[steps]]\naction = "nix_install"\npackages = ["x"]\n'
    with pytest.raises(UnsupportedAction, match="nix_install"):
        require_supported(parse_recipe(other), LINUX)
    assert isinstance(parse_recipe(KUBECTL).steps[0], DownloadStep)


def test_json_path_value_follows_keys_and_indexes() -> None:
    doc = {"a": [{"v": "1.2"}, {"v": 3}], "t": True}
    assert json_path_value(doc, "a.0.v") == "1.2"
    assert json_path_value(doc, "a.1.v") == "3"
    assert json_path_value(doc, "a.-1.v") == "3"
    assert json_path_value(doc, "a.2.v") is None
    assert json_path_value(doc, "t") is None and json_path_value(doc, "a") is None


def _bench() -> ModuleType:
    path = REPO / "bench" / "registry_coverage.py"
    spec = importlib.util.spec_from_file_location("bench_registry_coverage", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_coverage_separates_parse_failures_from_unsupported_actions(tmp_path: Path) -> None:
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "kubectl.toml").write_text(KUBECTL)
    (tmp_path / "batch.toml").write_text(BATCH)
    (tmp_path / "musl-tool.toml").write_text(
        '[metadata]\nname = "musl-tool"\n[version]\nsource = "repology"\n'
        '[[steps]]\naction = "nix_install"\npackages = ["musl-tool"]\n'
    )
    (tmp_path / "broken.toml").write_text(BATCH.replace('binaries = ["tool"]', "binaries = 3"))
    bench = _bench()
    report = bench.measure(sorted(tmp_path.rglob("*.toml")))
    lines = report.lines()
    assert lines[-1] == "parsed 3/4, supported 2/4"
    assert report.unsupported == {"nix_install": 1, "version source repology": 1}
    (kind,) = report.parse_failures
    assert "steps[].binaries" in kind


def test_every_shared_fixture_recipe_parses_and_is_supported() -> None:
    root = require(RECIPES)
    paths = sorted(root.rglob("*.toml"))
    report = _bench().measure(paths)
    assert paths and report.lines()[-1] == (
        f"parsed {len(paths)}/{len(paths)}, supported {len(paths)}/{len(paths)}"
    )


def test_static_checks_accept_the_url_actions() -> None:
    from tsukud.create.static_checks import binary_paths, check_on_paper

    node = parse_recipe(NODE)
    assert binary_paths(node) == {"bin/node", "bin/npm"}
    assert check_on_paper(node) == []
    assert binary_paths(parse_recipe(KUBECTL)) == {"bin/kubectl"}
    wrong = parse_recipe(KUBECTL + '[verify]\ncommand = "kubect version"\n')
    assert [f.message for f in check_on_paper(wrong)] == [
        "verify command runs 'kubect', which the recipe does not install (it installs: kubectl)"
    ]
