"""Release asset lists built from the human-written recipes, with realistic decoys.

A recipe from tsuku's registry says which asset each platform installs, so reading it
for linux/darwin x amd64/arm64 at a few versions gives the "right answer" part of a
release. That reading (:func:`expected_names`) is the test package's independent one
(``tsukud.testing.asset_names``), not the renderer under test: a renderer bug must not
move the ground truth along with the matcher's answer.

Real releases also carry everything else, so every synthetic release gets the usual
noise: a checksum file, signatures, an SBOM, a Windows build, 32-bit x86 and ARMv7 Linux
builds, .deb/.rpm packages and a source tarball, spelled the way the project spells its
own platforms. Tools whose real releases carry more confusing neighbours (other
variants of the same build) get those too, from EXTRA; and a Rust project that ships
musl gets the gnu twin most such projects ship, to exercise the libc policy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from tests.shared import RECIPES, RELEASES, require
from tsukud.recipe import (
    STANDARD_PLATFORMS,
    GitHubArchiveStep,
    GitHubFileStep,
    Platform,
    Recipe,
    ResolvedVersion,
    UnsupportedPlatform,
    load_recipe,
    normalize_version,
    recipe_to_dict,
    render_recipe,
    tag_to_version,
    version_source,
)
from tsukud.recipe.release import Release
from tsukud.testing.asset_names import expected_assets, tag_prefix_of

MATRIX = RECIPES / "llm-test-matrix.json"

# The nine tools whose human-written recipes serve as ground truth for recipe generation.
GROUND_TRUTH_9 = (
    "s/stern.toml",
    "a/ast-grep.toml",
    "t/trivy.toml",
    "a/age.toml",
    "k/k3d.toml",
    "k/kind.toml",
    "k/k9s.toml",
    "t/tflint.toml",
    "a/atlantis.toml",
)

DEFAULT_TAGS = ("v1.4.2", "v1.3.0", "v1.2.7")
# Tag styles as the projects use them: no "v", CalVer, JDK build numbers.
TAGS: dict[str, tuple[str, ...]] = {
    "ast-grep": ("0.25.0", "0.24.1", "0.23.0"),
    "helix": ("25.01", "24.07", "24.03"),
    "liberica": ("21.0.5+11", "21.0.4+9", "21.0.3+10"),
    "gotop": ("v4.2.0", "v4.1.4", "v4.1.3"),
    "btop": ("v1.4.0", "v1.3.2", "v1.3.0"),
    "kustomize": ("kustomize/v5.4.2", "kustomize/v5.4.1", "kustomize/v5.3.0"),
}


def require_shared() -> None:
    """The recipes and the recorded releases, or a skip (a failure in CI)."""
    require(RECIPES)
    require(RELEASES)


def matrix_cases() -> dict[str, dict[str, str]]:
    """test id → {tool, repo, recipe, ...} from llm-test-matrix.json."""
    if not MATRIX.is_file():
        return {}
    tests: dict[str, dict[str, str]] = json.loads(MATRIX.read_text())["tests"]
    return tests


def install_steps(recipe: Recipe) -> list[GitHubArchiveStep | GitHubFileStep]:
    return [s for s in recipe.steps if isinstance(s, GitHubArchiveStep | GitHubFileStep)]


def repo_of(recipe: Recipe) -> str:
    return install_steps(recipe)[0].repo


def expected_names(recipe: Recipe, tag: str, target: Platform) -> list[str] | None:
    """The assets a human recipe installs on ``target`` at ``tag`` according to the
    recipe format, computed without the renderer; None if it does not install there."""
    data = recipe_to_dict(recipe)
    prefix = tag_prefix_of(data)
    if prefix is not None and not tag.startswith(prefix):
        return None
    version = tag.removeprefix(prefix) if prefix else normalize_version(tag)
    wanted = expected_assets(data, version, target.os, target.arch, target.libc)
    return [a.name for a in wanted] or None


def render_names(
    recipe: Recipe, tag: str, target: Platform, assets: tuple[str, ...] | None = None
) -> list[str] | None:
    """Asset names the installer's renderer picks for ``recipe`` on ``target`` at ``tag``;
    None if unsupported. For recipes under test (the matcher's); ground truth comes from
    :func:`expected_names`."""
    version = tag_to_version(tag, version_source(recipe).tag_prefix)
    if version is None:
        return None
    resolved = ResolvedVersion(version, tag)
    try:
        return [s.asset_name for s in render_recipe(recipe, resolved, target, assets=assets)]
    except UnsupportedPlatform:
        return None


# ----------------------------------------------------------------------------- decoys

_LINUX = re.compile(r"unknown-linux-(?:gnu|musl)|linux", re.IGNORECASE)
_I386 = {"amd64": "386", "x86_64": "i686", "x64": "x32", "64bit": "32bit"}
_ARMV7 = {"amd64": "armv7", "x86_64": "armv7", "x64": "armv7", "64bit": "ARM"}


def _windows(match: re.Match[str]) -> str:
    text = match.group()
    if text.lower().startswith("unknown-linux"):
        return "pc-windows-msvc"
    return "Windows" if text[0].isupper() else "windows"


def _swap_arch(name: str, raw: str, table: dict[str, str]) -> str:
    return name.replace(raw, table.get(raw, "386"), 1)


def _amd64_raw(recipe: Recipe) -> str:
    for step in install_steps(recipe):
        if step.arch_mapping and "amd64" in step.arch_mapping:
            return step.arch_mapping["amd64"]
    return "amd64"


def generic_decoys(recipe: Recipe, tool: str, version: str, linux_amd64: str | None) -> list[str]:
    decoys = [
        f"{tool}_{version}_checksums.txt",
        "SHA256SUMS",
        f"{tool}_{version}_amd64.deb",
        f"{tool}-{version}-1.x86_64.rpm",
        f"{tool}-{version}-source.tar.gz",
    ]
    if linux_amd64 is None:
        return decoys
    raw = _amd64_raw(recipe)
    windows = _LINUX.sub(_windows, linux_amd64, count=1)
    if windows.endswith((".tar.gz", ".tar.xz", ".tgz")):
        windows = re.sub(r"\.(tar\.gz|tar\.xz|tgz)$", ".zip", windows)
    elif "." not in windows.rsplit("-", 1)[-1]:
        windows += ".exe"
    armv7 = _swap_arch(linux_amd64, raw, _ARMV7).replace("linux-musl", "linux-musleabihf")
    decoys += [
        f"{linux_amd64}.sig",
        f"{linux_amd64}.sbom.json",
        f"{linux_amd64}.sha256",
        windows,
        _swap_arch(linux_amd64, raw, _I386),
        armv7,
    ]
    if "unknown-linux-musl" in linux_amd64:
        # Rust projects that ship musl usually ship gnu too; the policy must pick musl.
        decoys.append(linux_amd64.replace("unknown-linux-musl", "unknown-linux-gnu"))
    return decoys


# Neighbours the real releases have (checked against the projects' naming schemes).
EXTRA: dict[str, Callable[[str], list[str]]] = {
    "helix": lambda v: [f"helix-{v}-x86_64.AppImage", f"helix-{v}-x86_64.AppImage.zsync"],
    "minikube": lambda v: [
        "minikube-linux-amd64.tar.gz",
        "minikube-darwin-arm64.tar.gz",
        "docker-machine-driver-kvm2-amd64",
        "minikube-installer.exe",
    ],
    "cosign": lambda v: [
        "cosign-linux-pivkey-pkcs11key-amd64",
        "cosign-linux-amd64-keyless.pem",
        "cosign-linux-amd64-keyless.sig",
        "cosign_checksums.txt",
    ],
    "kopia": lambda v: [
        f"KopiaUI-{v}.dmg",
        f"KopiaUI-{v}-arm64.dmg",
        f"KopiaUI-Setup-{v}.exe",
        f"KopiaUI-{v}.AppImage",
        f"kopia-{v}-linux-arm.tar.gz",
    ],
    "k9s": lambda v: [
        "k9s_linux_amd64.apk",
        "k9s_Linux_ppc64le.tar.gz",
        "k9s_Linux_s390x.tar.gz",
        "checksums.sha256",
    ],
    "trivy": lambda v: [
        f"trivy_{v}_Linux-PPC64LE.tar.gz",
        f"trivy_{v}_Linux-s390x.tar.gz",
        f"trivy_{v}_FreeBSD-64bit.tar.gz",
        f"trivy_{v}_checksums.txt.pem",
    ],
    "liberica": lambda v: [
        f"bellsoft-jdk{v}-linux-amd64.tar.gz",
        f"bellsoft-jdk{v}-linux-aarch64.tar.gz",
        f"bellsoft-jdk{v}-linux-amd64-full.tar.gz",
        f"bellsoft-jdk{v}-linux-aarch64-full.tar.gz",
        f"bellsoft-jdk{v}-linux-amd64-lite.tar.gz",
        f"bellsoft-jdk{v}-linux-aarch64-lite.tar.gz",
        f"bellsoft-jre{v}-linux-amd64.tar.gz",
        f"bellsoft-jre{v}-linux-aarch64.tar.gz",
        f"bellsoft-jdk{v}-linux-x64-musl.tar.gz",
        f"bellsoft-jdk{v}-windows-amd64.zip",
    ],
    "age": lambda v: [f"age-v{v}-linux-arm.tar.gz", f"age-v{v}-freebsd-amd64.tar.gz"],
    "fly": lambda v: [f"flyctl_{v}_Windows_arm64.zip"],
}


def synthesize(
    recipe: Recipe, tool: str, tags: tuple[str, ...] | None = None, *, decoys: bool = True
) -> list[Release]:
    """Newest-first releases whose assets include exactly what ``recipe`` installs."""
    releases = []
    for tag in tags or TAGS.get(tool, DEFAULT_TAGS):
        version = normalize_version(tag)
        names: list[str] = []
        for target in STANDARD_PLATFORMS:
            names += expected_names(recipe, tag, target) or []
        if decoys:
            linux = expected_names(recipe, tag, STANDARD_PLATFORMS[0])
            names += generic_decoys(recipe, tool, version, linux[0] if linux else None)
            names += EXTRA.get(tool, lambda v: [])(version)
        releases.append(Release(tag=tag, assets=tuple(sorted(set(names)))))
    return releases


def load(path: str) -> Recipe:
    return load_recipe(RECIPES / path)
