"""Rendering: asset names, URLs, formats and install plans per platform and version."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tsukud.recipe import (
    STANDARD_PLATFORMS,
    AmbiguousAsset,
    ArchiveFormat,
    AssetMatchError,
    AssetNotFound,
    GitHubArchiveStep,
    InstallBinary,
    Platform,
    RecipeError,
    ResolvedVersion,
    UnsupportedFeature,
    UnsupportedPlatform,
    VerifyCheck,
    VerifyFailed,
    check_verify_output,
    detect_format,
    find_version,
    load_recipe,
    match_asset,
    parse_recipe,
    release_url,
    render_recipe,
    render_verify,
)

LINUX_AMD, LINUX_ARM, MAC_AMD, MAC_ARM = STANDARD_PLATFORMS
F = ArchiveFormat

# The nine ground-truth recipes (reference notes B7): tag, and the asset each of
# linux/amd64, linux/arm64, darwin/amd64, darwin/arm64 must get. Names were checked by
# hand against the projects' release pages' naming schemes.
GROUND_TRUTH: dict[str, tuple[str, str, tuple[str, str, str, str], ArchiveFormat, int]] = {
    "s/stern.toml": (
        "v1.30.0",
        "1.30.0",
        (
            "stern_1.30.0_linux_amd64.tar.gz",
            "stern_1.30.0_linux_arm64.tar.gz",
            "stern_1.30.0_darwin_amd64.tar.gz",
            "stern_1.30.0_darwin_arm64.tar.gz",
        ),
        F.TAR_GZ,
        0,
    ),
    "a/ast-grep.toml": (
        "0.25.0",  # ast-grep tags carry no "v"
        "0.25.0",
        (
            "app-x86_64-unknown-linux-gnu.zip",
            "app-aarch64-unknown-linux-gnu.zip",
            "app-x86_64-apple-darwin.zip",
            "app-aarch64-apple-darwin.zip",
        ),
        F.ZIP,
        0,
    ),
    "t/trivy.toml": (
        "v0.50.0",
        "0.50.0",
        (
            "trivy_0.50.0_Linux-64bit.tar.gz",
            "trivy_0.50.0_Linux-ARM64.tar.gz",
            "trivy_0.50.0_macOS-64bit.tar.gz",
            "trivy_0.50.0_macOS-ARM64.tar.gz",
        ),
        F.TAR_GZ,
        0,
    ),
    "a/age.toml": (
        "v1.2.1",
        "1.2.1",
        (
            "age-v1.2.1-linux-amd64.tar.gz",
            "age-v1.2.1-linux-arm64.tar.gz",
            "age-v1.2.1-darwin-amd64.tar.gz",
            "age-v1.2.1-darwin-arm64.tar.gz",
        ),
        F.TAR_GZ,
        1,
    ),
    "k/k3d.toml": (
        "v5.6.0",
        "5.6.0",
        ("k3d-linux-amd64", "k3d-linux-arm64", "k3d-darwin-amd64", "k3d-darwin-arm64"),
        F.RAW,
        0,
    ),
    "k/kind.toml": (
        "v0.22.0",
        "0.22.0",
        ("kind-linux-amd64", "kind-linux-arm64", "kind-darwin-amd64", "kind-darwin-arm64"),
        F.RAW,
        0,
    ),
    "k/k9s.toml": (
        "v0.32.4",
        "0.32.4",
        (
            "k9s_Linux_amd64.tar.gz",
            "k9s_Linux_arm64.tar.gz",
            "k9s_Darwin_amd64.tar.gz",
            "k9s_Darwin_arm64.tar.gz",
        ),
        F.TAR_GZ,
        0,
    ),
    "t/tflint.toml": (
        "v0.50.0",
        "0.50.0",
        (
            "tflint_linux_amd64.zip",
            "tflint_linux_arm64.zip",
            "tflint_darwin_amd64.zip",
            "tflint_darwin_arm64.zip",
        ),
        F.ZIP,
        0,
    ),
    "a/atlantis.toml": (
        "v0.27.0",
        "0.27.0",
        (
            "atlantis_linux_amd64.zip",
            "atlantis_linux_arm64.zip",
            "atlantis_darwin_amd64.zip",
            "atlantis_darwin_arm64.zip",
        ),
        F.ZIP,
        0,
    ),
}


@pytest.mark.parametrize("name", sorted(GROUND_TRUTH))
def test_ground_truth_recipes_render(recipes_dir: Path, name: str) -> None:
    tag, version, expected, fmt, strip = GROUND_TRUTH[name]
    recipe = load_recipe(recipes_dir / name)
    resolved = find_version(version, [tag])
    assert resolved == ResolvedVersion(version, tag)
    for target, asset in zip(STANDARD_PLATFORMS, expected, strict=True):
        (step,) = render_recipe(recipe, resolved, target)
        assert step.asset_name == asset, (name, target)
        assert step.archive_format is fmt
        assert step.strip_dirs == strip
        repo = recipe.steps[step.index].repo  # type: ignore[union-attr]
        assert step.url == f"https://github.com/{repo}/releases/download/{tag}/{asset}"
        # Rendering against a release that has exactly these assets also works.
        assert render_recipe(recipe, resolved, target, assets=list(expected))[0].asset_name == asset


def test_ground_truth_install_plans(recipes_dir: Path) -> None:
    age = render_recipe(
        load_recipe(recipes_dir / "a/age.toml"), ResolvedVersion("1.2.1", "v1.2.1"), LINUX_AMD
    )[0]
    assert age.binaries == (
        InstallBinary("age", "bin/age"),
        InstallBinary("age-keygen", "bin/age-keygen"),
    )
    assert age.download_name == age.asset_name
    k3d = render_recipe(
        load_recipe(recipes_dir / "k/k3d.toml"), ResolvedVersion("5.6.0", "v5.6.0"), MAC_ARM
    )[0]
    assert k3d.download_name == "k3d" and k3d.binaries == (InstallBinary("k3d", "bin/k3d"),)
    assert k3d.install_mode == "binaries"


def test_other_fixture_plans(recipes_dir: Path) -> None:
    v = ResolvedVersion("1.0.0", "v1.0.0")
    cosign = render_recipe(load_recipe(recipes_dir / "c/cosign.toml"), v, LINUX_ARM)[0]
    assert cosign.asset_name == "cosign-linux-arm64"
    assert cosign.download_name == "cosign-linux-arm64"
    assert cosign.binaries == (InstallBinary("cosign-linux-arm64", "bin/cosign"),)
    fly = render_recipe(load_recipe(recipes_dir / "f/fly.toml"), v, MAC_AMD)[0]
    assert fly.asset_name == "flyctl_1.0.0_macOS_x86_64.tar.gz"
    assert fly.binaries == (InstallBinary("flyctl", "bin/fly"),)
    btop = render_recipe(load_recipe(recipes_dir / "b/btop.toml"), v, LINUX_ARM)[0]
    assert btop.asset_name == "btop-aarch64-unknown-linux-musl.tar.gz"
    assert btop.binaries == (InstallBinary("btop/bin/btop", "bin/btop"),)
    liberica = render_recipe(
        load_recipe(recipes_dir / "l/liberica.toml"),
        ResolvedVersion("21.0.5+11", "21.0.5+11"),
        LINUX_ARM,
    )[0]
    assert liberica.asset_name == "bellsoft-jdk21.0.5+11-linux-aarch64-crac.tar.gz"
    assert liberica.url.endswith(
        "/releases/download/21.0.5+11/bellsoft-jdk21.0.5+11-linux-aarch64-crac.tar.gz"
    )
    assert liberica.install_mode == "directory"
    assert liberica.binaries[0] == InstallBinary("bin/java", "bin/java")
    helix = render_recipe(
        load_recipe(recipes_dir / "h/helix.toml"), ResolvedVersion("24.07", "24.07"), MAC_ARM
    )[0]
    assert (
        helix.asset_name == "helix-24.07-aarch64-macos.tar.xz" and helix.archive_format is F.TAR_XZ
    )
    gotop = render_recipe(
        load_recipe(recipes_dir / "g/gotop.toml"), ResolvedVersion("4.2.0", "v4.2.0"), LINUX_AMD
    )[0]
    assert gotop.asset_name == "gotop_v4.2.0_linux_amd64.tgz" and gotop.archive_format is F.TAR_GZ


def test_musl_hosts(recipes_dir: Path) -> None:
    musl = Platform("linux", "amd64", "musl")
    stern = render_recipe(
        load_recipe(recipes_dir / "s/stern.toml"), ResolvedVersion("1.30.0", "v1.30.0"), musl
    )
    assert stern[0].asset_name == "stern_1.30.0_linux_amd64.tar.gz"
    with pytest.raises(UnsupportedPlatform):
        render_recipe(
            load_recipe(recipes_dir / "a/ast-grep.toml"), ResolvedVersion("0.25.0", "0.25.0"), musl
        )


# ----------------------------------------------------- checks against recorded releases


def releases(releases_dir: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((releases_dir / name).read_text())
    return data


def test_gitleaks_recipe_reproduces_thirty_real_releases(
    recipes_dir: Path, releases_dir: Path
) -> None:
    recipe = load_recipe(recipes_dir / "g/gitleaks.toml")
    data = releases(releases_dir, "gitleaks__gitleaks.json")
    tags = [r["tag_name"] for r in data["releases"]]
    assert len(tags) == 30
    for release in data["releases"]:
        assets = [a["name"] for a in release["assets"]]
        resolved = find_version(release["tag_name"].removeprefix("v"), tags)
        for target in STANDARD_PLATFORMS:
            step = render_recipe(recipe, resolved, target, assets=assets)[0]
            assert step.asset_name in assets
            if release["tag_name"] == "v8.28.0":
                assert step.asset_name == data["labels"][target.key]
        # 32-bit ARM has no mapping, so the raw GOARCH "arm" names no asset; the error
        # lists what the release has (gitleaks calls those builds armv6/armv7).
        with pytest.raises(AssetNotFound, match=r"gitleaks_.*_linux_armv7\.tar\.gz"):
            render_recipe(recipe, resolved, Platform("linux", "arm", "glibc"), assets=assets)


BUF = """\
[metadata]
name = "buf"

[[steps]]
action = "github_file"
when = { platform = ["linux/amd64", "darwin/amd64", "darwin/arm64"] }
repo = "bufbuild/buf"
asset_pattern = "buf-{os}-{arch}"
binary = "buf"
os_mapping = { linux = "Linux", darwin = "Darwin" }
arch_mapping = { amd64 = "x86_64" }

[[steps]]
action = "github_file"
when = { platform = ["linux/arm64"] }
repo = "bufbuild/buf"
asset_pattern = "buf-Linux-aarch64"
binary = "buf"
"""


def test_buf_platform_clauses_match_recorded_labels(releases_dir: Path) -> None:
    data = releases(releases_dir, "bufbuild__buf.json")
    recipe = parse_recipe(BUF, "buf.toml")
    release = data["releases"][0]
    assets = [a["name"] for a in release["assets"]]
    resolved = find_version("1.61.0", [r["tag_name"] for r in data["releases"]])
    for target in STANDARD_PLATFORMS:
        (step,) = render_recipe(recipe, resolved, target, assets=assets)
        assert step.asset_name == data["labels"][target.key]
        assert step.archive_format is F.RAW
        assert step.url == next(
            a["browser_download_url"] for a in release["assets"] if a["name"] == step.asset_name
        )


def test_piknik_wildcard_is_ambiguous_on_macos(releases_dir: Path) -> None:
    data = releases(releases_dir, "jedisct1__piknik.json")
    assets = [a["name"] for a in data["releases"][0]["assets"]]
    with pytest.raises(AmbiguousAsset) as info:
        match_asset("piknik-macos*-0.10.2.tar.gz", assets)
    assert "piknik-macos-0.10.2.tar.gz" in info.value.message
    assert "piknik-macos-intel-0.10.2.tar.gz" in info.value.message
    assert (
        match_asset("piknik-linux_x86_64-*.tar.gz", assets) == "piknik-linux_x86_64-0.10.2.tar.gz"
    )


# ------------------------------------------------------------------------- wildcards

ASSETS = [
    "tool-1.0-linux-amd64.tar.gz",
    "tool-1.0-linux-amd64-musl.tar.gz",
    "tool-1.0-darwin-arm64.zip",
    "checksums.txt",
]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("tool-*-linux-amd64.tar.gz", "tool-1.0-linux-amd64.tar.gz"),
        ("tool-1.0-darwin-*", "tool-1.0-darwin-arm64.zip"),
        ("tool-1.0-linux-amd64-mus?.tar.gz", "tool-1.0-linux-amd64-musl.tar.gz"),
        ("tool-1.0-linux-amd64[-.]musl.tar.gz", "tool-1.0-linux-amd64-musl.tar.gz"),
        ("tool-1.0-linux-amd64[^.]*", "tool-1.0-linux-amd64-musl.tar.gz"),
        ("checksums.txt", "checksums.txt"),
    ],
)
def test_match_asset(pattern: str, expected: str) -> None:
    assert match_asset(pattern, ASSETS) == expected


def test_match_asset_errors_list_candidates() -> None:
    with pytest.raises(
        AmbiguousAsset,
        match=re.escape(
            "tool-1.0-linux-* matches 2 assets: "
            "tool-1.0-linux-amd64.tar.gz, tool-1.0-linux-amd64-musl.tar.gz"
        ),
    ):
        match_asset("tool-1.0-linux-*", ASSETS)
    with pytest.raises(
        AssetNotFound,
        match=re.escape("no release asset matches tool-*-windows.zip; the release has: tool-1.0-"),
    ):
        match_asset("tool-*-windows.zip", ASSETS)
    with pytest.raises(AssetNotFound, match=r"no release asset named tool\.exe"):
        match_asset("tool.exe", ASSETS)
    many = [f"a{i}" for i in range(30)]
    with pytest.raises(AssetNotFound, match=r"a19, … \(10 more\)"):
        match_asset("b*", many)
    with pytest.raises(RecipeError, match="unclosed"):
        match_asset("tool-[abc", ASSETS)


def test_wildcard_needs_the_asset_list() -> None:
    recipe = parse_recipe(
        '[metadata]\nname = "t"\n[[steps]]\naction = "github_archive"\nrepo = "o/t"\n'
        'asset_pattern = "t-{version}-{os}-*.tar.gz"\nbinaries = ["t"]\n'
    )
    v = ResolvedVersion("1.0", "v1.0")
    with pytest.raises(AssetMatchError, match="has wildcards; the release's asset list is needed"):
        render_recipe(recipe, v, LINUX_AMD)
    step = render_recipe(
        recipe, v, LINUX_AMD, assets=["t-1.0-linux-x86_64.tar.gz", "t-1.0-darwin-arm64.tar.gz"]
    )[0]
    assert step.asset_name == "t-1.0-linux-x86_64.tar.gz"


# --------------------------------------------------------------------------- formats


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("a.tar.gz", F.TAR_GZ),
        ("a.TGZ", F.TAR_GZ),
        ("a.tar.xz", F.TAR_XZ),
        ("a.txz", F.TAR_XZ),
        ("a.tar.bz2", F.TAR_BZ2),
        ("a.tbz", F.TAR_BZ2),
        ("a.tbz2", F.TAR_BZ2),
        ("a.tar.zst", F.TAR_ZST),
        ("a.tzst", F.TAR_ZST),
        ("a.tar", F.TAR),
        ("a.zip", F.ZIP),
        ("tool-linux-amd64.gz", F.GZ),
        ("tool.xz", F.XZ),
        ("tool.bz2", F.BZ2),
        ("tool.zst", F.ZST),
        ("tool-linux-amd64", F.RAW),
        ("tool_1.2.3_linux", F.RAW),
        ("tool.exe", F.RAW),
    ],
)
def test_detect_format(name: str, fmt: ArchiveFormat) -> None:
    assert detect_format(name) is fmt


def test_detect_format_refuses_lzip() -> None:
    with pytest.raises(UnsupportedFeature, match=r"tar\.lz archives are not supported yet"):
        detect_format("a.tar.lz")


def archive_recipe(pattern: str, extra: str = "") -> str:
    return (
        '[metadata]\nname = "t"\n[[steps]]\naction = "github_archive"\nrepo = "o/t"\n'
        f'asset_pattern = "{pattern}"\nbinaries = ["t"]\n{extra}'
    )


def test_archive_format_param_wins_and_aliases() -> None:
    v = ResolvedVersion("1.0", "v1.0")
    step = render_recipe(
        parse_recipe(archive_recipe("t-{version}", 'archive_format = "tgz"\n')), v, LINUX_AMD
    )[0]
    assert step.archive_format is F.TAR_GZ
    with pytest.raises(RecipeError, match=r"could not detect archive format from asset t-1\.0;"):
        render_recipe(parse_recipe(archive_recipe("t-{version}")), v, LINUX_AMD)


def test_checksum_urls() -> None:
    v = ResolvedVersion("1.0", "v1.0")
    asset = render_recipe(
        parse_recipe(
            archive_recipe("t-{version}-{os}.tar.gz", 'checksum_asset = "t-{version}-SHA256SUMS"\n')
        ),
        v,
        LINUX_AMD,
    )[0]
    assert asset.checksum_url == "https://github.com/o/t/releases/download/v1.0/t-1.0-SHA256SUMS"
    url = render_recipe(
        parse_recipe(
            archive_recipe("t.tar.gz", 'checksum_url = "https://sums.example/{version}/{os}"\n')
        ),
        v,
        LINUX_AMD,
    )[0]
    assert url.checksum_url == "https://sums.example/1.0/linux"


def test_release_url() -> None:
    assert (
        release_url(
            "kubernetes-sigs/kustomize", "kustomize/v5.7.1", "kustomize_v5.7.1_linux_amd64.tar.gz"
        )
        == "https://github.com/kubernetes-sigs/kustomize/releases/download/kustomize%2Fv5.7.1/kustomize_v5.7.1_linux_amd64.tar.gz"
    )
    assert (
        release_url("o/r", "v1", "a b", "http://127.0.0.1:8080/")
        == "http://127.0.0.1:8080/o/r/releases/download/v1/a%20b"
    )


def test_render_uses_the_github_url_parameter(recipes_dir: Path) -> None:
    recipe = load_recipe(recipes_dir / "k/kind.toml")
    (step,) = render_recipe(
        recipe, ResolvedVersion("0.22.0", "v0.22.0"), LINUX_AMD, github_url="https://mirror.test"
    )
    assert (
        step.url
        == "https://mirror.test/kubernetes-sigs/kind/releases/download/v0.22.0/kind-linux-amd64"
    )


def test_unmapped_values_pass_through() -> None:
    recipe = parse_recipe(
        archive_recipe("t-{os}-{arch}.tar.gz", 'arch_mapping = { amd64 = "x86_64" }\n')
    )
    step = render_recipe(recipe, ResolvedVersion("1", "1"), LINUX_ARM)[0]
    assert step.asset_name == "t-linux-arm64.tar.gz"
    assert isinstance(recipe.steps[0], GitHubArchiveStep)


# ---------------------------------------------------------------------------- verify


def test_render_verify(recipes_dir: Path) -> None:
    kind = load_recipe(recipes_dir / "k/kind.toml")
    rendered = render_verify(kind.verify, "0.22.0", "/home/u/.tsuku/tools/kind-0.22.0")
    assert rendered is not None
    assert rendered.check == VerifyCheck(
        command="kind version", patterns=("kind v0.22.0",), exit_code=0
    )
    assert rendered.mode == "version"
    check_verify_output(rendered.check, 0, "kind v0.22.0 go1.22.0 linux/amd64\n")


def test_render_verify_patterns_install_dir_and_additional() -> None:
    recipe = parse_recipe(
        '[metadata]\nname = "t"\n[verify]\ncommand = "{install_dir}/bin/t --version"\n'
        'patterns = ["t {version}", "{install_dir}"]\nmode = "output"\nexit_code = 1\n'
        '[[verify.additional]]\ncommand = "t help {version}"\npattern = "{version} {install_dir}"\n'
    )
    rendered = render_verify(recipe.verify, "2.0", "/opt/t")
    assert rendered is not None
    assert rendered.check == VerifyCheck(
        command="/opt/t/bin/t --version", patterns=("t 2.0", "/opt/t"), exit_code=1
    )
    assert rendered.mode == "output"
    # additional patterns get {version} only, as in the reference
    assert rendered.additional == (
        VerifyCheck(command="t help 2.0", patterns=("2.0 {install_dir}",)),
    )


def test_no_verify_command() -> None:
    assert render_verify(None, "1", "/x") is None
    assert (
        render_verify(
            parse_recipe('[metadata]\nname = "t"\n[verify]\npattern = "x"\n').verify, "1", "/x"
        )
        is None
    )


def test_check_verify_output_failures() -> None:
    check = VerifyCheck(command="age --version", patterns=("v1.2.1",))
    check_verify_output(check, 0, "  v1.2.1\n")
    with pytest.raises(VerifyFailed) as info:
        check_verify_output(check, 0, "v1.2.0\n")
    assert info.value.message == "pattern mismatch\n  Missing: v1.2.1\n  Got: v1.2.0"
    with pytest.raises(
        VerifyFailed, match=r"exited with 127 \(expected 0\)\nOutput: sh: age: not found"
    ):
        check_verify_output(check, 127, "sh: age: not found\n")
    check_verify_output(VerifyCheck(command="x", exit_code=1), 1, "anything")
